package procruntime_test

import (
	"errors"
	"fmt"
	"os"
	"path/filepath"
	"regexp"
	"strconv"
	"strings"
	"testing"
	"time"

	"github.com/actorlet/actorlet/test/testutil"

	"google.golang.org/grpc/codes"
	"google.golang.org/grpc/status"
	runtimeapi "k8s.io/cri-api/pkg/apis/runtime/v1"

	"github.com/actorlet/actorlet/cri"
)

func TestContainerExit(t *testing.T) {
	e := newEnv(t)
	sbID, sb := e.runSandbox("exit", nil)
	tests := []struct {
		name     string
		script   string
		code     int32
		reason   string
		wantLogs []string // regexps, one per log line
	}{
		{
			name: "error", script: "echo hi; echo err >&2; exit 3", code: 3, reason: "Error",
			wantLogs: []string{`^\S+ stdout F hi$`, `^\S+ stderr F err$`},
		},
		{
			name: "completed", script: "echo $GREETING; printf partial", code: 0, reason: "Completed",
			wantLogs: []string{`^\S+ stdout F hello$`, `^\S+ stdout F partial$`},
		},
		{name: "signalled", script: "kill -9 $$", code: 137, reason: "Error"},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			cfg := containerConfig(tt.name, nil, "sh", "-c", tt.script)
			id := e.run(sbID, sb, cfg)
			st := e.waitExited(id)
			if st.ExitCode != tt.code || st.Reason != tt.reason {
				t.Errorf("exit = %d %q, want %d %q", st.ExitCode, st.Reason, tt.code, tt.reason)
			}
			if st.StartedAt == 0 || st.FinishedAt < st.StartedAt || st.CreatedAt > st.StartedAt {
				t.Errorf("timestamps created=%d started=%d finished=%d", st.CreatedAt, st.StartedAt, st.FinishedAt)
			}
			wantPath := filepath.Join(sb.LogDirectory, tt.name, "0.log")
			if st.LogPath != wantPath || st.Image.GetImage() != "busybox" || !strings.HasPrefix(st.ImageRef, "sha256:") {
				t.Errorf("status log path %q image %v ref %q", st.LogPath, st.Image, st.ImageRef)
			}
			b, err := os.ReadFile(wantPath)
			if err != nil {
				t.Fatalf("read log: %v", err)
			}
			lines := strings.Split(strings.TrimSuffix(string(b), "\n"), "\n")
			if len(tt.wantLogs) == 0 {
				return
			}
			if len(lines) != len(tt.wantLogs) {
				t.Fatalf("log = %q, want %d lines", b, len(tt.wantLogs))
			}
			// stdout and stderr are copied concurrently: match as a set.
			for _, re := range tt.wantLogs {
				found := false
				for _, l := range lines {
					found = found || regexp.MustCompile(re).MatchString(l)
				}
				if !found {
					t.Errorf("no log line matches %s in %q", re, b)
				}
			}
			ts, _, _ := strings.Cut(lines[0], " ")
			if _, err := time.Parse(time.RFC3339Nano, ts); err != nil {
				t.Errorf("log timestamp %q: %v", ts, err)
			}
		})
	}
}

func TestStopContainerEscalatesToKill(t *testing.T) {
	e := newEnv(t)
	id := e.runStubborn("stop", "0.05")
	start := time.Now()
	if err := e.c.StopContainer(ctx(t), id, 1); err != nil {
		t.Fatalf("StopContainer: %v", err)
	}
	elapsed := time.Since(start)
	if elapsed < 900*time.Millisecond || elapsed > 5*time.Second {
		t.Errorf("StopContainer took %v, want about 1s", elapsed)
	}
	st := e.status(id)
	if st.State != runtimeapi.ContainerState_CONTAINER_EXITED || st.ExitCode != 137 || st.Reason != "Error" {
		t.Errorf("after stop: %s %d %q, want EXITED 137 Error", st.State, st.ExitCode, st.Reason)
	}
	// Stopping an exited or an unknown container is fine (CRI: idempotent).
	if err := e.c.StopContainer(ctx(t), id, 1); err != nil {
		t.Errorf("StopContainer on an exited container: %v", err)
	}
	if err := e.c.StopContainer(ctx(t), "nope", 1); err != nil {
		t.Errorf("StopContainer unknown = %v, want nil", err)
	}
}

// runStubborn runs a container "stubborn", which ignores SIGTERM (its loop
// sleeps for sleep seconds), in a new sandbox named sandbox, and waits until
// the shell installed its trap: a TERM before that would end it (a loaded
// machine showed exit 143). It returns the container's ID.
func (e *env) runStubborn(sandbox, sleep string) string {
	e.t.Helper()
	sbID, sb := e.runSandbox(sandbox, nil)
	id := e.run(sbID, sb, containerConfig("stubborn", nil, "sh", "-c", "trap '' TERM; echo ready; while :; do sleep "+sleep+"; done"))
	testutil.Eventually(e.t, 5*time.Second, func() error {
		b, err := os.ReadFile(filepath.Join(sb.LogDirectory, "stubborn", "0.log"))
		if err != nil || !strings.Contains(string(b), "ready") {
			return errors.New("container has not trapped TERM yet")
		}
		return nil
	})
	return id
}

func TestStopContainerPolite(t *testing.T) {
	e := newEnv(t)
	sbID, sb := e.runSandbox("polite", nil)
	id := e.run(sbID, sb, containerConfig("sleeper", nil, "sleep", "30"))
	start := time.Now()
	if err := e.c.StopContainer(ctx(t), id, 10); err != nil {
		t.Fatalf("StopContainer: %v", err)
	}
	if elapsed := time.Since(start); elapsed > 5*time.Second {
		t.Errorf("StopContainer of a TERM-obeying process took %v", elapsed)
	}
	if st := e.status(id); st.ExitCode != 128+15 || st.Reason != "Error" {
		t.Errorf("after TERM: %d %q, want 143 Error", st.ExitCode, st.Reason)
	}
}

func TestMissingBinaryIsStartError(t *testing.T) {
	e := newEnv(t)
	sbID, sb := e.runSandbox("missing", nil)
	for _, cmd := range []string{"/nonexistent/binary", "no-such-command-anywhere"} {
		cfg := containerConfig("c"+filepath.Base(cmd), nil, cmd)
		id := e.create(sbID, sb, cfg)
		err := e.c.StartContainer(ctx(t), id)
		if status.Code(err) != codes.Unknown {
			t.Errorf("StartContainer %s = %v, want code Unknown", cmd, err)
		}
		st := e.status(id)
		if st.State != runtimeapi.ContainerState_CONTAINER_EXITED || st.ExitCode != 128 || st.Reason != "StartError" || st.Message == "" {
			t.Errorf("%s: %s %d %q %q, want EXITED 128 StartError with a message", cmd, st.State, st.ExitCode, st.Reason, st.Message)
		}
	}
}

func TestExecSync(t *testing.T) {
	e := newEnv(t)
	sbID, sb := e.runSandbox("exec", nil)
	cfg := containerConfig("sleeper", nil, "sleep", "30")
	cfg.WorkingDir = t.TempDir()
	id := e.run(sbID, sb, cfg)

	out, _, err := e.c.ExecSync(ctx(t), id, []string{"sh", "-c", "echo $GREETING; pwd"}, 5*time.Second)
	if err != nil || string(out) != "hello\n"+cfg.WorkingDir+"\n" {
		t.Errorf("ExecSync env/dir = %q, %v", out, err)
	}
	out, errOut, err := e.c.ExecSync(ctx(t), id, []string{"sh", "-c", "echo out; echo err >&2; exit 5"}, 5*time.Second)
	var exitErr *cri.ExitError
	if !errors.As(err, &exitErr) || exitErr.Code != 5 || string(out) != "out\n" || string(errOut) != "err\n" {
		t.Errorf("ExecSync exit 5 = %q, %q, %v", out, errOut, err)
	}
	start := time.Now()
	_, _, err = e.c.ExecSync(ctx(t), id, []string{"sleep", "20"}, time.Second)
	if !cri.IsDeadlineExceeded(err) || time.Since(start) > 5*time.Second {
		t.Errorf("ExecSync timeout = %v after %v, want DeadlineExceeded after ~1s", err, time.Since(start))
	}
	if _, _, err := e.c.ExecSync(ctx(t), id, []string{"no-such-command-anywhere"}, time.Second); err == nil || errors.As(err, &exitErr) {
		t.Errorf("ExecSync of a missing command = %v, want a runtime error", err)
	}
}

func TestRemove(t *testing.T) {
	e := newEnv(t)
	sbID, sb := e.runSandbox("remove", nil)
	id := e.run(sbID, sb, containerConfig("sleeper", nil, "sleep", "30"))
	pid, _ := e.pids(id)
	if err := e.c.RemoveContainer(ctx(t), id); err != nil {
		t.Fatalf("RemoveContainer of a running container: %v", err)
	}
	if len(groupMembers(pid)) != 0 {
		t.Errorf("process group %d survived RemoveContainer", pid)
	}
	if _, err := e.c.ContainerStatus(ctx(t), id, false); !cri.IsNotFound(err) {
		t.Errorf("ContainerStatus after remove = %v, want NotFound", err)
	}
	if err := e.c.RemoveContainer(ctx(t), id); err != nil {
		t.Errorf("RemoveContainer twice: %v", err)
	}

	id2 := e.run(sbID, sb, containerConfig("second", nil, "sleep", "30"))
	if err := e.c.StopPodSandbox(ctx(t), sbID); err != nil {
		t.Fatalf("StopPodSandbox: %v", err)
	}
	if st := e.status(id2); st.State != runtimeapi.ContainerState_CONTAINER_EXITED {
		t.Errorf("container after StopPodSandbox is %s", st.State)
	}
	resp, err := e.c.PodSandboxStatus(ctx(t), sbID, false)
	if err != nil || resp.Status.State != runtimeapi.PodSandboxState_SANDBOX_NOTREADY {
		t.Fatalf("PodSandboxStatus after stop = %v, %v", resp, err)
	}
	if _, err := e.c.CreateContainer(ctx(t), sbID, containerConfig("late", nil, "true"), sb); err == nil {
		t.Error("CreateContainer in a stopped sandbox succeeded")
	}
	if err := e.c.RemovePodSandbox(ctx(t), sbID); err != nil {
		t.Fatalf("RemovePodSandbox: %v", err)
	}
	if cs, _ := e.c.ListContainers(ctx(t), nil); len(cs) != 0 {
		t.Errorf("containers left after RemovePodSandbox: %v", cs)
	}
	if _, err := os.Stat(filepath.Join(sb.LogDirectory, "second", "0.log")); err != nil {
		t.Errorf("RemovePodSandbox must keep logs: %v", err)
	}
	if err := e.c.RemovePodSandbox(ctx(t), sbID); err != nil {
		t.Errorf("RemovePodSandbox twice: %v", err)
	}
}

func TestCreateValidation(t *testing.T) {
	e := newEnv(t)
	sbID, sb := e.runSandbox("valid", nil)
	noCmd := containerConfig("nocmd", nil, "x")
	noCmd.Command = nil
	noImage := containerConfig("noimage", nil, "true")
	noImage.Image = nil
	tests := []struct {
		name      string
		sandboxID string
		cfg       *runtimeapi.ContainerConfig
		code      codes.Code
		field     string
	}{
		{"no command", sbID, noCmd, codes.InvalidArgument, "command"},
		{"no image", sbID, noImage, codes.InvalidArgument, "image"},
		{"no metadata", sbID, &runtimeapi.ContainerConfig{}, codes.InvalidArgument, "metadata.name"},
		{"unknown sandbox", "nope", containerConfig("x", nil, "true"), codes.NotFound, "nope"},
	}
	for _, tt := range tests {
		_, err := e.c.CreateContainer(ctx(t), tt.sandboxID, tt.cfg, sb)
		if status.Code(err) != tt.code || !strings.Contains(err.Error(), tt.field) {
			t.Errorf("%s: %v, want %v naming %q", tt.name, err, tt.code, tt.field)
		}
	}
	e.create(sbID, sb, containerConfig("dup", nil, "true"))
	if _, err := e.c.CreateContainer(ctx(t), sbID, containerConfig("dup", nil, "true"), sb); status.Code(err) != codes.AlreadyExists {
		t.Errorf("duplicate name: %v, want AlreadyExists", err)
	}
}

// execOutputCap is procruntime's per-stream ExecSync output cap.
const execOutputCap = 4 * 1024 * 1024

// TestExecSyncOutputCapped: a command printing far more than the cap gets
// its output cut to the cap per stream; the rest is drained and
// discarded, and the call still succeeds with the command's exit code.
func TestExecSyncOutputCapped(t *testing.T) {
	e := newEnv(t)
	sbID, sb := e.runSandbox("execcap", nil)
	id := e.run(sbID, sb, containerConfig("sleeper", nil, "sleep", "30"))

	// 24 MiB on each stream: over the 16 MiB gRPC message limit if uncapped.
	out, errOut, err := e.c.ExecSync(ctx(t), id,
		[]string{"sh", "-c", "head -c 25165824 /dev/zero; head -c 25165824 /dev/zero >&2"}, 30*time.Second)
	if err != nil {
		t.Fatalf("ExecSync of a huge output = %v, want success with capped output", err)
	}
	if len(out) != execOutputCap || len(errOut) != execOutputCap {
		t.Errorf("ExecSync output = %d/%d bytes, want %d each", len(out), len(errOut), execOutputCap)
	}
}

// TestReopenContainerLog: after the log file is renamed (as log rotation
// does), ReopenContainerLog makes the shim write to a new file at the log
// path; no line is lost or duplicated across the two files.
func TestReopenContainerLog(t *testing.T) {
	e := newEnv(t)
	sbID, sb := e.runSandbox("reopen", nil)
	cfg := containerConfig("counter", nil, "sh", "-c", "i=0; while true; do echo line$i; i=$((i+1)); sleep 0.005; done")
	id := e.run(sbID, sb, cfg)
	logPath := e.status(id).GetLogPath()
	if logPath == "" {
		t.Fatal("container has no log path")
	}
	waitLines := func(path string, n int) []string {
		t.Helper()
		var lines []string
		testutil.Eventually(t, 10*time.Second, func() error {
			b, _ := os.ReadFile(path)
			if i := strings.LastIndexByte(string(b), '\n'); i >= 0 {
				b = b[:i] // whole lines only
			}
			lines = strings.Split(string(b), "\n")
			if len(b) == 0 || len(lines) < n {
				return fmt.Errorf("%d lines in %s, want %d", len(lines), path, n)
			}
			return nil
		})
		return lines
	}
	waitLines(logPath, 5)
	rotated := logPath + ".1"
	if err := os.Rename(logPath, rotated); err != nil {
		t.Fatal(err)
	}
	if err := e.c.ReopenContainerLog(ctx(t), id); err != nil {
		t.Fatalf("ReopenContainerLog = %v", err)
	}
	// The rotated file no longer grows once the call returned.
	before, _ := os.ReadFile(rotated)
	current := waitLines(logPath, 5)
	after, _ := os.ReadFile(rotated)
	if len(after) != len(before) {
		t.Errorf("the rotated file grew after ReopenContainerLog returned: %d → %d bytes", len(before), len(after))
	}
	old := strings.Split(strings.TrimSuffix(string(after), "\n"), "\n")
	// Lines run on from one file to the next.
	seq := func(line string) int {
		_, content, _ := strings.Cut(line, " F line")
		n, err := strconv.Atoi(content)
		if err != nil {
			t.Fatalf("log line %q: %v", line, err)
		}
		return n
	}
	all := append(old, current...)
	for i := 1; i < len(all); i++ {
		if seq(all[i]) != seq(all[i-1])+1 {
			t.Fatalf("line %d: %q follows %q (lost or repeated output across the reopen)", i, all[i], all[i-1])
		}
	}

	// Not running: FailedPrecondition, as containerd answers.
	if err := e.c.StopContainer(ctx(t), id, 0); err != nil {
		t.Fatal(err)
	}
	if err := e.c.ReopenContainerLog(ctx(t), id); status.Code(errors.Unwrap(err)) != codes.FailedPrecondition {
		t.Errorf("ReopenContainerLog of a stopped container = %v, want FailedPrecondition", err)
	}
	if err := e.c.ReopenContainerLog(ctx(t), "nope"); status.Code(errors.Unwrap(err)) != codes.NotFound {
		t.Errorf("ReopenContainerLog of an unknown container = %v, want NotFound", err)
	}
}
