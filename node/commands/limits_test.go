package commands

import (
	"context"
	"encoding/json"
	"fmt"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/nats-io/nats.go/micro"
	v1 "k8s.io/api/core/v1"

	"github.com/actorlet/actorlet/messages/wire"
)

// rawRequest sends a request to n1's verb and returns the reply body or
// its micro error code and description.
func rawRequest(t *testing.T, c *wire.Client, verb string, body []byte) ([]byte, string, string) {
	t.Helper()
	msg, err := c.NC.Request(wire.CommandSubject("n1", verb), body, 10*time.Second)
	if err != nil {
		t.Fatalf("%s: %v (want an answer, never a timeout)", verb, err)
	}
	return msg.Data, msg.Header.Get(micro.ErrorCodeHeader), msg.Header.Get(micro.ErrorHeader)
}

// TestListPodsPaginates: 2,000 pods (~3 MB of JSON) come in pages that
// each fit in one bus message; the client follows them all, in order.
func TestListPodsPaginates(t *testing.T) {
	nc := runNATS(t)
	fake := &fakeNode{}
	var pods []*v1.Pod
	for i := 0; i < 2000; i++ {
		p := testPod("default", fmt.Sprintf("pod-%04d", i), "", "app")
		p.Annotations = map[string]string{"filler": strings.Repeat("f", 1500)}
		pods = append(pods, p)
	}
	fake.setPods(pods...)
	startService(t, nc, fake, ServiceOptions{})
	c := &wire.Client{NC: nc, Timeout: 10 * time.Second}

	data, code, desc := rawRequest(t, c, wire.VerbPodsList, []byte(`{}`))
	if code != "" {
		t.Fatalf("first page: error %s %s", code, desc)
	}
	var page wire.ListPodsResponse
	if err := json.Unmarshal(data, &page); err != nil {
		t.Fatal(err)
	}
	if page.Continue == "" || len(page.Pods) == 0 || len(page.Pods) >= 2000 || len(data) > int(nc.MaxPayload()) {
		t.Fatalf("first page: %d pods, %d bytes, continue %q; want a partial page within max_payload %d", len(page.Pods), len(data), page.Continue, nc.MaxPayload())
	}
	all, err := c.ListPods(context.Background(), "n1", "")
	if err != nil || len(all) != 2000 {
		t.Fatalf("ListPods = %d pods, %v; want 2000", len(all), err)
	}
	for i, p := range all {
		if want := fmt.Sprintf("pod-%04d", i); p.Name != want {
			t.Fatalf("pod %d is %s, want %s", i, p.Name, want)
		}
	}
	// An explicit limit, and the continue token from it.
	data, _, _ = rawRequest(t, c, wire.VerbPodsList, []byte(`{"limit":10}`))
	_ = json.Unmarshal(data, &page)
	if len(page.Pods) != 10 || page.Pods[9].Name != "pod-0009" {
		t.Fatalf("limit 10: %d pods", len(page.Pods))
	}
	data, _, _ = rawRequest(t, c, wire.VerbPodsList, []byte(`{"limit":10,"continue":"`+page.Continue+`"}`))
	_ = json.Unmarshal(data, &page)
	if len(page.Pods) != 10 || page.Pods[0].Name != "pod-0010" {
		t.Fatalf("second page of 10 starts at %s", page.Pods[0].Name)
	}
	for body, want := range map[string]string{`{"continue":"%%%"}`: "continue", `{"limit":-1}`: "limit"} {
		if _, code, desc := rawRequest(t, c, wire.VerbPodsList, []byte(body)); code != "400" || !strings.Contains(desc, want) {
			t.Errorf("%s: %s %q, want 400 naming %s", body, code, desc, want)
		}
	}
}

// TestExecOutputFitsTheReply: output larger than a bus message is cut to
// fit, flagged truncated, instead of a reply that never arrives.
func TestExecOutputFitsTheReply(t *testing.T) {
	nc := runNATS(t)
	fake := &fakeNode{exec: func([]string, time.Duration) ([]byte, []byte, int, error) {
		return make([]byte, 3<<20), []byte("some stderr"), 0, nil
	}}
	fake.setPods(testPod("default", "web", "u1", "app"))
	startService(t, nc, fake, ServiceOptions{})
	c := &wire.Client{NC: nc, Timeout: 10 * time.Second}
	resp, err := c.Exec(context.Background(), "n1", wire.ExecRequest{Name: "web", Command: []string{"cat", "/dev/zero"}})
	if err != nil {
		t.Fatalf("Exec of 3 MB of output = %v, want a truncated reply", err)
	}
	if !resp.Truncated || len(resp.Stdout) == 0 || len(resp.Stdout) >= 3<<20 || string(resp.Stderr) != "some stderr" {
		t.Errorf("reply: truncated %v, %d bytes of stdout, stderr %q", resp.Truncated, len(resp.Stdout), resp.Stderr)
	}
}

func TestFitOutput(t *testing.T) {
	for _, tc := range []struct{ out, err, max, wantOut, wantErr int }{
		{10, 10, 100, 10, 10},
		{1000, 10, 100, 90, 10},
		{10, 1000, 100, 10, 90},
		{1000, 1000, 100, 50, 50},
	} {
		o, e, cut := fitOutput(make([]byte, tc.out), make([]byte, tc.err), tc.max)
		if len(o) != tc.wantOut || len(e) != tc.wantErr || cut != (tc.out+tc.err > tc.max) {
			t.Errorf("fitOutput(%d, %d, %d) = %d, %d, %v", tc.out, tc.err, tc.max, len(o), len(e), cut)
		}
	}
}

// TestTooLargeReplyIsAnError: a reply that cannot be cut (a description
// over max_payload) is answered with 413, never left to time out; a huge
// name echoed in an error is cut.
func TestTooLargeReplyIsAnError(t *testing.T) {
	nc := runNATS(t)
	fake := &fakeNode{}
	p := testPod("default", "web", "u1", "app")
	p.Status.Message = strings.Repeat("m", 2<<20)
	fake.setPods(p)
	startService(t, nc, fake, ServiceOptions{})
	c := &wire.Client{NC: nc, Timeout: 10 * time.Second}

	if _, code, desc := rawRequest(t, c, wire.VerbPodsDescribe, []byte(`{"name":"web"}`)); code != "413" || !strings.Contains(desc, "max_payload") {
		t.Errorf("describe of a 2 MB pod: %s %q, want 413 naming max_payload", code, desc)
	}
	// pods.get reduces the pod as its published status is.
	if _, code, desc := rawRequest(t, c, wire.VerbPodsGet, []byte(`{"name":"web"}`)); code != "" {
		t.Errorf("get of a 2 MB pod: %s %q, want the pod reduced", code, desc)
	}
	huge := strings.Repeat("n", 900<<10)
	_, code, desc := rawRequest(t, c, wire.VerbPodsGet, []byte(`{"name":"`+huge+`"}`))
	if code != "404" || len(desc) > 2<<10 {
		t.Errorf("get of a 900 KB name: %s with a %d-byte description, want 404 cut to ~1 KiB", code, len(desc))
	}
}

// TestBusyWhenTooManyCommands: past MaxConcurrentCommands requests in
// flight, more are refused at once with 429 instead of queueing; the
// requests in flight complete, and the node serves again afterwards.
func TestBusyWhenTooManyCommands(t *testing.T) {
	nc := runNATS(t)
	release := make(chan struct{})
	var started sync.WaitGroup
	started.Add(MaxConcurrentCommands)
	fake := &fakeNode{exec: func([]string, time.Duration) ([]byte, []byte, int, error) {
		started.Done()
		<-release
		return []byte("ok"), nil, 0, nil
	}}
	fake.setPods(testPod("default", "web", "u1", "app"))
	startService(t, nc, fake, ServiceOptions{})
	c := &wire.Client{NC: nc, Timeout: 30 * time.Second}

	var wg sync.WaitGroup
	errs := make(chan error, MaxConcurrentCommands)
	for i := 0; i < MaxConcurrentCommands; i++ {
		wg.Add(1)
		go func() {
			defer wg.Done()
			_, err := c.Exec(context.Background(), "n1", wire.ExecRequest{Name: "web", Command: []string{"sleep"}})
			errs <- err
		}()
	}
	started.Wait() // every slot is taken
	for i := 0; i < 20; i++ {
		_, code, desc := rawRequest(t, c, wire.VerbPodsGet, []byte(`{"name":"web"}`))
		if code != "429" || !strings.Contains(desc, "MaxConcurrentCommands") {
			t.Fatalf("request %d over the limit: %s %q, want 429 naming MaxConcurrentCommands", i, code, desc)
		}
	}
	close(release)
	wg.Wait()
	close(errs)
	for err := range errs {
		if err != nil {
			t.Errorf("an exec in flight failed: %v", err)
		}
	}
	if _, code, desc := rawRequest(t, c, wire.VerbPodsGet, []byte(`{"name":"web"}`)); code != "" {
		t.Errorf("after the flood: %s %q", code, desc)
	}
}
