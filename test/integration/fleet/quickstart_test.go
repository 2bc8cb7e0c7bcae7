package fleet

import (
	"bytes"
	"context"
	"errors"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"syscall"
	"testing"
	"time"

	"github.com/nats-io/nats.go"

	"github.com/actorlet/actorlet/messages/wire/busauth"
	"github.com/actorlet/actorlet/node/agent"
)

// TestQuickStartIsAuthenticated is the README's quick start: a node on
// embedded defaults under ./.actorlet, then actorletctl with no credential
// flags from the same directory. The embedded server refuses anonymous
// clients; the operator credentials are the owner's alone; another OS user
// (when the test runs as root) gets nothing.
func TestQuickStartIsAuthenticated(t *testing.T) {
	f := newFleet(t) // only for the harness: the node below runs its own server
	cwd := t.TempDir()
	n := f.startNode(t, "quick", nil, func(c *agent.Config) {
		c.RootDir = filepath.Join(cwd, ".actorlet")
		c.NATS = agent.NATSConfig{Host: "127.0.0.1", Port: -1}
	})
	n.mu.Lock()
	url := n.agent.BusURL()
	n.mu.Unlock()

	authDir := agent.AuthDir(filepath.Join(cwd, ".actorlet"))
	for path, want := range map[string]os.FileMode{
		authDir: 0o700,
		filepath.Join(authDir, busauth.AdminCredsFile):          0o600,
		filepath.Join(authDir, busauth.SystemCredsFile):         0o600,
		filepath.Join(authDir, "account.nk"):                    0o600,
		filepath.Join(authDir, "operator.nk"):                   0o600,
		filepath.Join(authDir, busauth.NodesDir, "quick.creds"): 0o600,
		filepath.Join(authDir, busauth.NodesDir):                0o700,
	} {
		st, err := os.Stat(path)
		if err != nil {
			t.Fatal(err)
		}
		if st.Mode().Perm() != want {
			t.Errorf("%s has mode %v, want %v", path, st.Mode().Perm(), want)
		}
	}

	if nc, err := nats.Connect(url, nats.MaxReconnects(0)); err == nil {
		nc.Close()
		t.Fatal("the embedded server accepted an anonymous client")
	}

	var errExec error
	ctl := func(cred *syscall.Credential, args ...string) (string, string, int) {
		ctx, cancel := context.WithTimeout(context.Background(), 60*time.Second)
		defer cancel()
		cmd := exec.CommandContext(ctx, ctlBinary, args...)
		cmd.Dir = cwd
		cmd.Env = append(os.Environ(), "ACTORLET_NATS_URL="+url, "ACTORLET_CREDS=")
		if cred != nil {
			cmd.SysProcAttr = &syscall.SysProcAttr{Credential: cred}
		}
		var out, errOut bytes.Buffer
		cmd.Stdout, cmd.Stderr = &out, &errOut
		err := cmd.Run()
		var exitErr *exec.ExitError
		switch {
		case err == nil:
			return out.String(), errOut.String(), 0
		case errors.As(err, &exitErr):
			return out.String(), errOut.String(), exitErr.ExitCode()
		case cred != nil:
			errExec = err
			return "", "", -1
		}
		t.Fatalf("run actorletctl %v: %v", args, err)
		return "", "", -1
	}
	var out string
	if err := waitCond(func() bool {
		o, _, code := ctl(nil, "get", "nodes")
		out = o
		return code == 0 && strings.Contains(o, "quick")
	}); err != nil {
		t.Fatalf("actorletctl get nodes with no flags, as the node's user: %q", out)
	}

	if os.Geteuid() != 0 {
		t.Log("not root: the other-user check is skipped")
		return
	}
	// Let another user reach the binary and the working directory, so only
	// the auth directory's own modes stand between it and the credentials.
	for _, d := range []string{filepath.Dir(ctlBinary), cwd, filepath.Dir(cwd), filepath.Join(cwd, ".actorlet")} {
		if err := os.Chmod(d, 0o755); err != nil {
			t.Fatal(err)
		}
	}
	nobody := &syscall.Credential{Uid: 65534, Gid: 65534}
	for _, args := range [][]string{
		{"get", "nodes"},
		{"--creds", filepath.Join(authDir, busauth.AdminCredsFile), "get", "nodes"},
		{"--creds", filepath.Join(authDir, busauth.NodesDir, "quick.creds"), "get", "nodes"},
	} {
		o, e, code := ctl(nobody, args...)
		if errExec != nil {
			t.Skipf("another user cannot run actorletctl on this machine at all (%v): the other-user check is skipped", errExec)
		}
		if code == 0 || strings.Contains(o, "quick") {
			t.Errorf("another user ran actorletctl %v: exit %d, %q", args, code, o)
		}
		if !strings.Contains(e, "permission denied") && !strings.Contains(e, "Authorization Violation") {
			t.Errorf("actorletctl %v as another user: %q, want a permission or authorization error", args, e)
		}
	}
}

func waitCond(cond func() bool) error {
	deadline := time.Now().Add(waitFor)
	for time.Now().Before(deadline) {
		if cond() {
			return nil
		}
		time.Sleep(200 * time.Millisecond)
	}
	return errors.New("timed out")
}
