// Package testutil holds the few helpers every test package of actorlet
// uses: polling for an observable outcome instead of sleeping, and keeping
// klog quiet unless a test run asks for output.
package testutil

import (
	"flag"
	"fmt"
	"io"
	"os"
	"strings"
	"testing"
	"time"

	"k8s.io/klog/v2"
)

// Eventually polls cond every 10 ms until it returns nil, or fails t with
// cond's last error once timeout has passed.
func Eventually(t testing.TB, timeout time.Duration, cond func() error) {
	t.Helper()
	EventuallyEvery(t, timeout, 10*time.Millisecond, cond)
}

// EventuallyEvery is Eventually with its own poll interval, for conditions
// that are costly to check (a CRI listing, a CLI process).
func EventuallyEvery(t testing.TB, timeout, every time.Duration, cond func() error) {
	t.Helper()
	deadline := time.Now().Add(timeout)
	for {
		err := cond()
		if err == nil {
			return
		}
		if time.Now().After(deadline) {
			t.Fatalf("condition not met within %s: %v", timeout, err)
		}
		time.Sleep(every)
	}
}

// QuietKlog silences klog unless the tests run with -v; with -v and a
// non-empty verbosity, klog logs at that level. Call it from TestMain after
// flag.Parse.
func QuietKlog(verbosity string) {
	fs := flag.NewFlagSet("klog", flag.ContinueOnError)
	klog.InitFlags(fs)
	if testing.Verbose() {
		if verbosity != "" {
			_ = fs.Set("v", verbosity)
		}
		return
	}
	_ = fs.Set("logtostderr", "false")
	_ = fs.Set("stderrthreshold", "FATAL")
	klog.SetOutput(io.Discard)
}

// Until polls cond every 5 ms until it holds, or fails t naming what it
// waited for once timeout has passed.
func Until(t testing.TB, timeout time.Duration, what string, cond func() bool) {
	t.Helper()
	EventuallyEvery(t, timeout, 5*time.Millisecond, func() error {
		if cond() {
			return nil
		}
		return fmt.Errorf("waiting for %s", what)
	})
}

// Main is a TestMain that keeps klog quiet (QuietKlog with verbosity),
// runs the tests and exits with their result.
func Main(m *testing.M, verbosity string) {
	flag.Parse()
	QuietKlog(verbosity)
	os.Exit(m.Run())
}

// WantError checks err against what a table row expects: with want set,
// err must contain it, and WantError returns true (the row is done); with
// want empty, err must be nil.
func WantError(t testing.TB, err error, want string) bool {
	t.Helper()
	if want != "" {
		if err == nil || !strings.Contains(err.Error(), want) {
			t.Fatalf("error = %v, want one containing %q", err, want)
		}
		return true
	}
	if err != nil {
		t.Fatalf("unexpected error: %v", err)
	}
	return false
}
