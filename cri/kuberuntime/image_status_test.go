package kuberuntime

import (
	"context"
	"errors"
	"fmt"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	runtimeapi "k8s.io/cri-api/pkg/apis/runtime/v1"
	clocktesting "k8s.io/utils/clock/testing"
)

func presentImage(id string) *runtimeapi.ImageStatusResponse {
	return &runtimeapi.ImageStatusResponse{Image: &runtimeapi.Image{Id: id}}
}

// Containers of one image that ask together share one read, and its answer
// serves until the TTL passes or a pull forgets it.
func TestImageStatusesShareOneReadPerImage(t *testing.T) {
	clk := clocktesting.NewFakeClock(time.Unix(1000, 0))
	s := newImageStatuses(clk)
	var reads atomic.Int32
	gate := make(chan struct{})
	read := func() (*runtimeapi.ImageStatusResponse, error) {
		reads.Add(1)
		<-gate
		return presentImage("sha256:a"), nil
	}
	var wg sync.WaitGroup
	for i := 0; i < 20; i++ {
		wg.Add(1)
		go func() {
			defer wg.Done()
			st, err := s.get(context.Background(), "img:1", read)
			if err != nil || st.GetImage().GetId() != "sha256:a" {
				t.Errorf("get = %v, %v", st, err)
			}
		}()
	}
	for reads.Load() < 1 {
		time.Sleep(time.Millisecond)
	}
	close(gate)
	wg.Wait()
	if n := reads.Load(); n != 1 {
		t.Fatalf("%d reads for 20 callers of one image at once, want 1", n)
	}
	if _, err := s.get(context.Background(), "img:1", read); err != nil || reads.Load() != 1 {
		t.Fatalf("a get within the TTL read again (reads %d, err %v)", reads.Load(), err)
	}
	if _, _ = s.get(context.Background(), "img:2", read); reads.Load() != 2 {
		t.Fatalf("another image did not get its own read (reads %d)", reads.Load())
	}
	clk.Step(imageStatusTTL)
	if _, _ = s.get(context.Background(), "img:1", read); reads.Load() != 3 {
		t.Fatalf("a get past the TTL did not read again (reads %d)", reads.Load())
	}
	s.forget("img:1")
	if _, _ = s.get(context.Background(), "img:1", read); reads.Load() != 4 {
		t.Fatalf("a get after a pull forgot the image did not read again (reads %d)", reads.Load())
	}
}

// A failed read is not kept, and callers that waited on it read for
// themselves: one caller's cancelled context fails no one else.
func TestImageStatusesDoNotShareFailures(t *testing.T) {
	s := newImageStatuses(clocktesting.NewFakeClock(time.Unix(1000, 0)))
	var reads atomic.Int32
	gate := make(chan struct{})
	first := func() (*runtimeapi.ImageStatusResponse, error) {
		reads.Add(1)
		<-gate
		return nil, context.Canceled
	}
	ok := func() (*runtimeapi.ImageStatusResponse, error) {
		reads.Add(1)
		return presentImage("sha256:b"), nil
	}
	errc := make(chan error, 1)
	go func() { _, err := s.get(context.Background(), "img", first); errc <- err }()
	for reads.Load() < 1 {
		time.Sleep(time.Millisecond)
	}
	done := make(chan *runtimeapi.ImageStatusResponse, 1)
	go func() {
		st, err := s.get(context.Background(), "img", ok)
		if err != nil {
			t.Errorf("waiter: %v", err)
		}
		done <- st
	}()
	// Give the waiter time to queue on the read in flight; if it has not,
	// it finds no answer kept and reads itself: the test holds either way.
	time.Sleep(10 * time.Millisecond)
	close(gate)
	if err := <-errc; !errors.Is(err, context.Canceled) {
		t.Fatalf("first caller's error = %v, want its own", err)
	}
	if st := <-done; st.GetImage().GetId() != "sha256:b" {
		t.Fatalf("waiter got %v, want its own read's answer", st)
	}
	if _, err := s.get(context.Background(), "img", ok); err != nil {
		t.Fatal(err)
	}
	if len(s.reads) != 1 {
		t.Fatalf("%d answers kept, want the one good one", len(s.reads))
	}
}

// A pod stream of ever-new image names (hostile or just many) keeps at most
// maxImageStatuses answers; past it reads still answer, unkept.
func TestImageStatusesBounded(t *testing.T) {
	clk := clocktesting.NewFakeClock(time.Unix(1000, 0))
	s := newImageStatuses(clk)
	read := func() (*runtimeapi.ImageStatusResponse, error) { return presentImage("x"), nil }
	for i := 0; i < maxImageStatuses+500; i++ {
		if _, err := s.get(context.Background(), fmt.Sprintf("img:%d", i), read); err != nil {
			t.Fatal(err)
		}
	}
	if n := len(s.reads); n > maxImageStatuses {
		t.Fatalf("%d answers kept, want at most %d", n, maxImageStatuses)
	}
	clk.Step(imageStatusTTL)
	if _, err := s.get(context.Background(), "img:new", read); err != nil {
		t.Fatal(err)
	}
	if n := len(s.reads); n != 1 {
		t.Fatalf("%d answers kept after the TTL passed, want only the new one", n)
	}
}

// An absent image is not kept: a pod that failed with ErrImageNeverPull
// sees the image loaded meanwhile on its next sync.
func TestImageStatusesDoNotKeepAbsentImages(t *testing.T) {
	s := newImageStatuses(clocktesting.NewFakeClock(time.Unix(1000, 0)))
	present := false
	read := func() (*runtimeapi.ImageStatusResponse, error) {
		if present {
			return presentImage("sha256:c"), nil
		}
		return &runtimeapi.ImageStatusResponse{}, nil
	}
	if st, _ := s.get(context.Background(), "img", read); st.GetImage() != nil {
		t.Fatal("absent image reported present")
	}
	present = true
	if st, _ := s.get(context.Background(), "img", read); st.GetImage().GetId() != "sha256:c" {
		t.Fatalf("image loaded after an absent answer: got %v, want it present", st)
	}
}
