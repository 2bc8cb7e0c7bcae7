package main

import (
	"bytes"
	"context"
	"fmt"
	"net"
	"strings"
	"testing"

	testclock "k8s.io/utils/clock/testing"

	"github.com/actorlet/actorlet/bus/bustest"
)

// runIn runs actorletctl in process with exactly args (no --server added).
func runIn(args ...string) (string, string, int) {
	var out, errOut bytes.Buffer
	c := &cli{stdin: strings.NewReader(""), stdout: &out, stderr: &errOut, clock: testclock.NewFakeClock(now)}
	code := c.main(context.Background(), args)
	return out.String(), errOut.String(), code
}

// A new user's connection errors say what was tried and what to do next:
// no server (is make run running?), and refused credentials (which, and
// where they are looked up).
func TestConnectErrorsSayWhatToDo(t *testing.T) {
	t.Setenv("ACTORLET_CREDS", "")
	t.Setenv("ACTORLET_NATS_URL", "")
	t.Chdir(t.TempDir()) // no ./.actorlet here

	l, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	closed := fmt.Sprintf("nats://%s", l.Addr())
	l.Close() // nothing listens there now

	srv := bustest.StartServer(t, bustest.ServerOptions{Secure: true})
	other := bustest.StartServer(t, bustest.ServerOptions{Secure: true}) // another bus's authority
	for _, tc := range []struct {
		name string
		args []string
		want []string
	}{
		{"no server", []string{"--server", closed, "get", "pods"}, []string{
			"connect to NATS at " + closed, "server: " + closed + " (from --server)",
			"credentials: none (looked up in --creds, then $ACTORLET_CREDS, then ./.actorlet/auth/admin.creds (relative to the current directory ",
			"is `make run` (or the node, bin/actorlet) running?",
		}},
		{"no credentials", []string{"--server", srv.ClientURL(), "get", "pods"}, []string{
			"Authorization Violation", "credentials: none", "the server refused these credentials",
			"Run actorletctl from the directory where `make run` runs, or give --creds ROOT_DIR/auth/admin.creds",
		}},
		{"wrong credentials", []string{"--server", srv.ClientURL(), "--creds", other.AdminCreds(), "get", "pods"}, []string{
			"credentials: credentials " + other.AdminCreds() + " (--creds)", "the server refused these credentials",
		}},
	} {
		t.Run(tc.name, func(t *testing.T) {
			_, errOut, code := runIn(tc.args...)
			if code != 1 {
				t.Errorf("exit %d, want 1", code)
			}
			for _, w := range tc.want {
				if !strings.Contains(errOut, w) {
					t.Errorf("stderr lacks %q:\n%s", w, errOut)
				}
			}
		})
	}
}
