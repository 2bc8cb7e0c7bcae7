package e2eenv

import (
	"os"
	"path/filepath"
	"strings"
	"testing"
)

const good = `ACTORLET_E2E_CONTAINERD=2
VERSION=v2.4.2
ENDPOINT=unix:///run/containerd-2/containerd.sock
PIDFILE=%PID%
TASK_DIR=/run/containerd-2/io.containerd.runtime.v2.task/k8s.io
SUBNET=10.89.0.0/16
LOG=/var/lib/actorlet-e2e/containerd-2.log
`

// state points StateDir at a temporary directory and writes flavor 2's env
// file (with content, %PID% replaced by a pid file's path holding pid).
func state(t *testing.T, content, pid string) string {
	t.Helper()
	dir := t.TempDir()
	t.Setenv("ACTORLET_E2E_STATE", dir)
	pidFile := filepath.Join(dir, "pid")
	if err := os.WriteFile(pidFile, []byte(pid), 0o644); err != nil {
		t.Fatal(err)
	}
	if err := os.WriteFile(Path("2"), []byte(strings.ReplaceAll(content, "%PID%", pidFile)), 0o644); err != nil {
		t.Fatal(err)
	}
	return pidFile
}

func TestLoad(t *testing.T) {
	pidFile := state(t, good, "4242\n")
	c, err := Load("2")
	if err != nil {
		t.Fatal(err)
	}
	want := Containerd{Flavor: "2", Version: "v2.4.2", Endpoint: "unix:///run/containerd-2/containerd.sock", PIDFile: pidFile,
		TaskDir: "/run/containerd-2/io.containerd.runtime.v2.task/k8s.io", Subnet: "10.89.0.0/16", Log: "/var/lib/actorlet-e2e/containerd-2.log"}
	if c != want {
		t.Fatalf("Load = %+v, want %+v", c, want)
	}
	if pid, err := c.PID(); err != nil || pid != 4242 {
		t.Fatalf("PID = %d, %v; want 4242", pid, err)
	}
}

func TestFlavor(t *testing.T) {
	t.Setenv(FlavorVar, "")
	if f := Flavor(); f != "2" {
		t.Fatalf("default flavor %q, want 2", f)
	}
	t.Setenv(FlavorVar, "1.6")
	if f := Flavor(); f != "1.6" {
		t.Fatalf("flavor %q, want 1.6", f)
	}
}

// Hostile or broken files fail with an error naming what is wrong.
func TestLoadRejects(t *testing.T) {
	for _, tc := range []struct {
		name, content, flavor, want string
	}{
		{"unknown flavor", good, "1.7", `ACTORLET_E2E_CONTAINERD="1.7": want one of 2, 1.6`},
		{"not set up", "", "1.6", "run test/e2e/setup.sh with ACTORLET_E2E_CONTAINERD=1.6"},
		{"too large", good + strings.Repeat("#", maxFile), "2", "larger than 65536 bytes"},
		{"not key=value", good + "garbage\n", "2", `line 8: want KEY=VALUE, have "garbage"`},
		{"key missing", strings.Replace(good, "SUBNET=10.89.0.0/16\n", "", 1), "2", "no SUBNET"},
		{"other flavor's file", strings.Replace(good, "CONTAINERD=2", "CONTAINERD=1.6", 1), "2", `ACTORLET_E2E_CONTAINERD="1.6", want "2"`},
		{"tcp endpoint", strings.Replace(good, "unix:///run/containerd-2/containerd.sock", "tcp://1.2.3.4:1", 1), "2", `ENDPOINT "tcp://1.2.3.4:1": want unix://PATH`},
	} {
		t.Run(tc.name, func(t *testing.T) {
			state(t, tc.content, "1")
			_, err := Load(tc.flavor)
			if err == nil || !strings.Contains(err.Error(), tc.want) {
				t.Fatalf("Load = %v, want an error with %q", err, tc.want)
			}
		})
	}
}

func TestPIDRejects(t *testing.T) {
	for _, tc := range []struct{ name, pid, want string }{
		{"not a number", "containerd", `"containerd" is not a pid`},
		{"zero", "0", `"0" is not a pid`},
		{"huge", strings.Repeat("1", maxFile+1), "larger than 65536 bytes"},
	} {
		t.Run(tc.name, func(t *testing.T) {
			state(t, good, tc.pid)
			c, err := Load("2")
			if err != nil {
				t.Fatal(err)
			}
			if _, err := c.PID(); err == nil || !strings.Contains(err.Error(), tc.want) {
				t.Fatalf("PID: %v, want an error with %q", err, tc.want)
			}
		})
	}
}
