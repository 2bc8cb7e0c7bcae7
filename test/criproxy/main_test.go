package main

import (
	"context"
	"fmt"
	"os"
	"path/filepath"
	"strings"
	"syscall"
	"testing"
	"time"

	runtimeapi "k8s.io/cri-api/pkg/apis/runtime/v1"

	"github.com/actorlet/actorlet/cri"
	"github.com/actorlet/actorlet/cri/procruntime/proctest"
	"github.com/actorlet/actorlet/test/testutil"
)

func TestMain(m *testing.M) { proctest.MainQuiet(m, "") }

// Calls through the proxy reach the runtime, answers and errors come back
// unchanged, and each call is counted by its method.
func TestForwardsAndCounts(t *testing.T) {
	defer syscall.Umask(syscall.Umask(0)) // the widest umask: the socket must still be private
	dir := t.TempDir()
	_, rt := proctest.Start(t, filepath.Join(dir, "state"))
	sock, counts := filepath.Join(dir, "proxy.sock"), filepath.Join(dir, "counts.txt")
	ctx, cancel := context.WithCancel(context.Background())
	done := make(chan error, 1)
	go func() { done <- run(ctx, sock, strings.TrimPrefix(rt.Endpoint(), "unix://"), counts) }()
	defer func() {
		cancel()
		if err := <-done; err != nil {
			t.Errorf("run: %v", err)
		}
	}()
	testutil.Until(t, 5*time.Second, "the proxy's socket", func() bool { _, err := os.Stat(sock); return err == nil })
	if st, err := os.Stat(sock); err != nil || st.Mode().Perm() != 0o600 {
		t.Fatalf("the proxy's socket: %v, %v; want mode 0600 (only its owner reaches the runtime)", st.Mode(), err)
	}
	c, err := cri.Dial(ctx, "unix://"+sock)
	if err != nil {
		t.Fatal(err)
	}
	defer c.Close()
	v, err := c.Version(ctx, "v1")
	if err != nil || v.GetRuntimeName() == "" {
		t.Fatalf("Version through the proxy = %v, %v", v, err)
	}
	for range 2 {
		if _, err := c.ListPodSandbox(ctx, nil); err != nil {
			t.Fatalf("ListPodSandbox through the proxy: %v", err)
		}
	}
	if _, err := c.ContainerStatus(ctx, "no-such-container", false); !cri.IsNotFound(err) {
		t.Fatalf("ContainerStatus of a missing container through the proxy = %v, want the runtime's not found", err)
	}
	for _, want := range []string{
		"2 " + runtimeapi.RuntimeService_ListPodSandbox_FullMethodName,
		"1 " + runtimeapi.RuntimeService_ContainerStatus_FullMethodName,
	} {
		testutil.Until(t, 5*time.Second, "the count "+want, func() bool {
			b, _ := os.ReadFile(counts)
			return strings.Contains(string(b), want+"\n")
		})
	}
}

// A client naming ever new methods cannot grow the count table past
// maxMethods: the rest are counted together.
func TestMethodTableBounded(t *testing.T) {
	p := &proxy{calls: map[string]int{}}
	for i := range 2 * maxMethods {
		p.count(fmt.Sprintf("/x.Service/M%d", i))
	}
	if len(p.calls) != maxMethods+1 || p.calls[otherMethods] != maxMethods {
		t.Fatalf("%d methods in the table, %d calls under %q; want %d and %d", len(p.calls), p.calls[otherMethods], otherMethods, maxMethods+1, maxMethods)
	}
}
