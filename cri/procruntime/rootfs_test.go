package procruntime_test

import (
	"context"
	"encoding/json"
	"fmt"
	"os"
	"path/filepath"
	"strings"
	"sync"
	"syscall"
	"testing"
	"time"

	"google.golang.org/grpc/codes"
	"google.golang.org/grpc/status"
	runtimeapi "k8s.io/cri-api/pkg/apis/runtime/v1"

	"github.com/actorlet/actorlet/cri/procruntime"
	"github.com/actorlet/actorlet/cri/procruntime/proctest"
	"github.com/actorlet/actorlet/test/testutil"
)

// newViewEnv is newIsolatedEnv that also needs filesystem views.
func newViewEnv(t *testing.T) *env {
	t.Helper()
	if iso := procruntime.DefaultIsolation(); !iso.Filesystem {
		t.Skipf("filesystem views need root and nsenter (have %s)", iso)
	}
	return newIsolatedEnv(t)
}

// hostState is what a pod must never change on the host: the mode and
// owner of /, /tmp, /etc and /dev, the entries of / and /etc, and the
// files the tests' pods write to in their own /tmp and /dev.
func hostState(t *testing.T) string {
	t.Helper()
	s := testutil.HostSnapshot(t, []string{"/", "/etc"}, []string{"/tmp", "/dev"})
	for _, f := range []string{"/tmp/healthy", "/dev/termination-log", "/x", "/usr/share/message", "/var/log/1.log"} {
		if _, err := os.Lstat(f); err == nil {
			s += f + " exists\n"
		}
	}
	return s
}

func (e *env) execErr(id string, cmd ...string) (string, int32) {
	e.t.Helper()
	resp, err := e.rawRuntime().ExecSync(ctx(e.t), &runtimeapi.ExecSyncRequest{ContainerId: id, Cmd: cmd, Timeout: 10})
	if err != nil {
		e.t.Fatalf("ExecSync %q: %v", cmd, err)
	}
	return strings.TrimSpace(string(resp.Stdout) + string(resp.Stderr)), resp.ExitCode
}

func TestFilesystemView(t *testing.T) {
	stateBefore := hostState(t)
	e := newViewEnv(t)
	vols := t.TempDir()
	work := filepath.Join(vols, "work")     // an emptyDir
	config := filepath.Join(vols, "config") // a configMap
	msgFile := filepath.Join(vols, "msg")   // a termination message file
	for _, d := range []string{work, config} {
		if err := os.Mkdir(d, 0o777); err != nil {
			t.Fatal(err)
		}
	}
	if err := os.WriteFile(filepath.Join(config, "color"), []byte("blue"), 0o644); err != nil {
		t.Fatal(err)
	}
	if err := os.WriteFile(msgFile, nil, 0o666); err != nil {
		t.Fatal(err)
	}
	mounts := []*runtimeapi.Mount{
		{ContainerPath: "/work-dir", HostPath: work},
		{ContainerPath: "/etc/config", HostPath: config, Readonly: true},
		{ContainerPath: "/dev/termination-log", HostPath: msgFile},
	}
	sb, sbCfg := e.runSandbox("view", nil)
	// An init container writes into the shared volume and its message.
	initCfg := containerConfig("init", nil, "sh", "-c", "echo from-init > /work-dir/index.html && echo bye > /dev/termination-log")
	initCfg.Mounts = mounts
	if st := e.waitExited(e.run(sb, sbCfg, initCfg)); st.ExitCode != 0 {
		t.Fatalf("init container: exit %d %s %s", st.ExitCode, st.Reason, st.Message)
	}
	app := containerConfig("app", nil, "sleep", "60")
	app.Mounts = mounts
	app.WorkingDir = "/work-dir"
	appID := e.run(sb, sbCfg, app)

	t.Run("volumes at their container paths, shared by the pod", func(t *testing.T) {
		if got := e.execOut(appID, "cat", "/work-dir/index.html"); got != "from-init" {
			t.Errorf("/work-dir/index.html = %q", got)
		}
		if got := e.execOut(appID, "cat", "/etc/config/color"); got != "blue" {
			t.Errorf("/etc/config/color = %q", got)
		}
		if got := e.execOut(appID, "pwd"); got != "/work-dir" {
			t.Errorf("working directory %q", got)
		}
		if b, _ := os.ReadFile(msgFile); strings.TrimSpace(string(b)) != "bye" {
			t.Errorf("termination message file on the host = %q", b)
		}
		if _, err := os.Stat("/etc/config"); !os.IsNotExist(err) {
			t.Errorf("the host got /etc/config: %v", err)
		}
		if out, code := e.execErr(appID, "touch", "/etc/config/new"); code == 0 {
			t.Errorf("wrote into a read-only volume: %s", out)
		}
	})

	t.Run("the host's root is read-only", func(t *testing.T) {
		for _, cmd := range [][]string{
			{"touch", "/x"}, {"chmod", "400", "/"}, {"mkdir", "/etc/x"}, {"touch", "/usr/share/message"},
			{"sh", "-c", "echo 1 > /var/log/1.log"}, {"touch", "/sys/kernel/x"}, {"sh", "-c", "echo x >> /etc/hostname"},
		} {
			if out, code := e.execErr(appID, cmd...); code == 0 {
				t.Errorf("%q succeeded in the pod: %s", cmd, out)
			}
		}
		if out, code := e.execErr(appID, "ls", e.root); code == 0 && out != "" {
			t.Errorf("the runtime's state is visible in the pod: %q", out)
		}
	})

	t.Run("a private /tmp per pod, a /dev of its own", func(t *testing.T) {
		e.execOut(appID, "sh", "-c", "echo healthy > /tmp/healthy && echo x > /dev/shm/seg")
		if _, err := os.Stat("/tmp/healthy"); !os.IsNotExist(err) {
			t.Errorf("the pod's /tmp/healthy is on the host: %v", err)
		}
		side := e.run(sb, sbCfg, containerConfig("side", nil, "sleep", "60"))
		if got := e.execOut(side, "cat", "/tmp/healthy", "/dev/shm/seg"); got != "healthy\nx" {
			t.Errorf("a second container of the pod sees %q in /tmp and /dev/shm", got)
		}
		other, otherCfg := e.runSandbox("other", nil)
		oid := e.run(other, otherCfg, containerConfig("o", nil, "sleep", "60"))
		if out, code := e.execErr(oid, "cat", "/tmp/healthy"); code == 0 {
			t.Errorf("another pod sees the pod's /tmp: %s", out)
		}
		devs := e.execOut(appID, "ls", "/dev")
		for _, want := range []string{"null", "zero", "urandom", "tty", "pts", "shm", "ptmx", "termination-log"} {
			if !strings.Contains(devs, want) {
				t.Errorf("/dev lacks %s: %s", want, devs)
			}
		}
		for _, host := range []string{"vda", "mem", "kmsg"} {
			if strings.Contains(" "+strings.ReplaceAll(devs, "\n", " ")+" ", " "+host+" ") {
				t.Errorf("/dev shows the host's %s: %s", host, devs)
			}
		}
		if got := e.execOut(appID, "sh", "-c", "echo gone > /dev/null && head -c 3 /dev/zero | wc -c"); got != "3" {
			t.Errorf("/dev/null and /dev/zero: %q", got)
		}
	})

	t.Run("a restarted container gets its view again", func(t *testing.T) {
		again := containerConfig("app", nil, "cat", "/etc/config/color")
		again.Metadata.Attempt = 1
		again.Mounts = mounts
		id := e.run(sb, sbCfg, again)
		e.waitExited(id)
		log, _ := os.ReadFile(filepath.Join(sbCfg.LogDirectory, again.LogPath))
		if !strings.Contains(string(log), "blue") {
			t.Errorf("log of the restarted container: %q", log)
		}
	})

	t.Run("adopted by a restarted runtime, execs still enter the view", func(t *testing.T) {
		pid, _ := e.pids(appID)
		e.rt.Stop()
		e.start()
		if got := e.execOut(appID, "cat", "/etc/config/color"); got != "blue" {
			t.Errorf("/etc/config/color after a runtime restart = %q", got)
		}
		if again, _ := e.pids(appID); again != pid {
			t.Errorf("container process %d became %d: started twice", pid, again)
		}
	})

	t.Run("a symlink planted in a volume leads nowhere outside", func(t *testing.T) {
		if err := os.Symlink("/etc", filepath.Join(work, "link")); err != nil {
			t.Fatal(err)
		}
		evil := containerConfig("evil", nil, "true")
		evil.Mounts = []*runtimeapi.Mount{
			{ContainerPath: "/data", HostPath: work},
			{ContainerPath: "/data/link/planted", HostPath: config},
		}
		id := e.create(sb, sbCfg, evil)
		err := e.c.StartContainer(ctx(t), id)
		if _, statErr := os.Stat("/etc/planted"); !os.IsNotExist(statErr) {
			t.Errorf("the host got /etc/planted (start: %v)", err)
		}
		if err == nil {
			t.Errorf("a mount through a symlink to the view's read-only /etc started")
		}
	})

	t.Run("removal leaves no mount and an unchanged host", func(t *testing.T) {
		for _, id := range []string{sb, "other"} {
			_ = e.c.RemovePodSandbox(ctx(t), id)
		}
		list, err := e.c.ListPodSandbox(ctx(t), nil)
		if err != nil {
			t.Fatal(err)
		}
		for _, s := range list {
			if err := e.c.RemovePodSandbox(ctx(t), s.Id); err != nil {
				t.Fatal(err)
			}
		}
		testutil.Eventually(t, 10*time.Second, func() error {
			if left := testutil.MountsUnder(t, filepath.Dir(e.root), vols); len(left) > 0 {
				return fmt.Errorf("mounts left on the host: %q", left)
			}
			return nil
		})
		if after := hostState(t); after != stateBefore {
			t.Errorf("the host changed:\nbefore\n%s\nafter\n%s", stateBefore, after)
		}
	})
}

// TestViewHidesPaths: HidePaths (the agent's state) are empty in a view.
func TestViewHidesPaths(t *testing.T) {
	if !procruntime.DefaultIsolation().Filesystem {
		t.Skip("filesystem views need root")
	}
	// Outside /tmp, which a view replaces with the pod's own anyway.
	hidden, err := os.MkdirTemp("/var/tmp", "actorlet-hide-")
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { _ = os.RemoveAll(hidden) })
	if err := os.WriteFile(filepath.Join(hidden, "admin.creds"), []byte("secret"), 0o600); err != nil {
		t.Fatal(err)
	}
	dir := t.TempDir()
	e := &env{t: t, root: filepath.Join(dir, "state"), sock: filepath.Join(dir, "cri.sock"), logDir: filepath.Join(dir, "logs"),
		iso: procruntime.DefaultIsolation(), hide: []string{hidden}}
	e.start()
	sb, sbCfg := e.runSandbox("hide", nil)
	id := e.run(sb, sbCfg, containerConfig("c", nil, "sleep", "60"))
	if out, code := e.execErr(id, "cat", filepath.Join(hidden, "admin.creds")); code == 0 {
		t.Errorf("a hidden file is readable in the view: %q", out)
	}
	if out := e.execOut(id, "ls", "-A", hidden); out != "" {
		t.Errorf("a hidden directory lists %q in the view", out)
	}
}

// TestViewReadonlyMounts: readonly leaves the mounts below the source as
// they are (CRI), recursive_read_only makes them read-only too; a mount
// made on the host after the sandbox started is in the view.
func TestViewReadonlyMounts(t *testing.T) {
	e := newViewEnv(t)
	src := t.TempDir()
	sub := filepath.Join(src, "sub")
	if err := os.Mkdir(sub, 0o755); err != nil {
		t.Fatal(err)
	}
	sb, sbCfg := e.runSandbox("ro", nil)
	// Mounted on the host after the sandbox started: a view copies the
	// host's mounts when its container starts.
	if err := syscall.Mount("tmpfs", sub, "tmpfs", 0, "size=1m"); err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { _ = syscall.Unmount(sub, syscall.MNT_DETACH) })
	cfg := containerConfig("c", nil, "sleep", "60")
	cfg.Mounts = []*runtimeapi.Mount{
		{ContainerPath: "/ro", HostPath: src, Readonly: true},
		{ContainerPath: "/rro", HostPath: src, Readonly: true, RecursiveReadOnly: true},
	}
	id := e.run(sb, sbCfg, cfg)
	for cmd, wantOK := range map[string]bool{"touch /ro/sub/f": true, "touch /ro/f": false, "touch /rro/sub/g": false} {
		if out, code := e.execErr(id, "sh", "-c", cmd); (code == 0) != wantOK {
			t.Errorf("%s: exit %d (%s), want success %v", cmd, code, out, wantOK)
		}
	}
	st, err := e.rawRuntime().Status(ctx(t), &runtimeapi.StatusRequest{})
	if err != nil || len(st.RuntimeHandlers) == 0 || !st.RuntimeHandlers[0].Features.GetRecursiveReadOnlyMounts() {
		t.Errorf("runtime handlers %v, %v: want recursive read-only mounts advertised", st.GetRuntimeHandlers(), err)
	}
	bad := containerConfig("bad", nil, "true")
	bad.Mounts = []*runtimeapi.Mount{{ContainerPath: "/rro", HostPath: src, RecursiveReadOnly: true}}
	if _, err := e.c.CreateContainer(ctx(t), sb, bad, sbCfg); status.Code(err) != codes.InvalidArgument || !strings.Contains(err.Error(), "recursive_read_only") {
		t.Errorf("recursive_read_only without readonly: %v", err)
	}
}

func TestViewMountChecks(t *testing.T) {
	e := newViewEnv(t)
	sb, sbCfg := e.runSandbox("checks", nil)
	if _, err := e.c.PullImage(ctx(t), &runtimeapi.ImageSpec{Image: "busybox"}, nil, sbCfg); err != nil {
		t.Fatal(err)
	}
	dir := t.TempDir()
	many := make([]*runtimeapi.Mount, 257)
	for i := range many {
		many[i] = &runtimeapi.Mount{ContainerPath: fmt.Sprintf("/m%d", i), HostPath: dir}
	}
	for name, tc := range map[string]struct {
		mounts []*runtimeapi.Mount
		want   string
	}{
		"too many":      {many, "limit is 256"},
		"relative path": {[]*runtimeapi.Mount{{ContainerPath: "data", HostPath: dir}}, "container_path \"data\": must be absolute"},
		"bidirectional": {[]*runtimeapi.Mount{{ContainerPath: "/data", HostPath: dir, Propagation: runtimeapi.MountPropagation_PROPAGATION_BIDIRECTIONAL}}, "Bidirectional"},
		"no host path":  {[]*runtimeapi.Mount{{ContainerPath: "/data", HostPath: filepath.Join(dir, "missing")}}, "host_path"},
		"over /proc":    {[]*runtimeapi.Mount{{ContainerPath: "/proc", HostPath: dir}}, "its own /proc"},
		"huge path":     {[]*runtimeapi.Mount{{ContainerPath: "/" + strings.Repeat("a", 5000), HostPath: dir}}, "longer than 4096"},
	} {
		cfg := containerConfig("c-"+strings.ReplaceAll(name, " ", "-"), nil, "true")
		cfg.Mounts = tc.mounts
		_, err := e.c.CreateContainer(ctx(t), sb, cfg, sbCfg)
		if status.Code(err) != codes.InvalidArgument || !strings.Contains(err.Error(), tc.want) {
			t.Errorf("%s: CreateContainer = %v, want InvalidArgument with %q", name, err, tc.want)
		}
	}
	// A missing working directory is a start error, not a running container.
	cfg := containerConfig("nowd", nil, "true")
	cfg.WorkingDir = "/does/not/exist"
	id := e.create(sb, sbCfg, cfg)
	if err := e.c.StartContainer(ctx(t), id); err == nil || !strings.Contains(err.Error(), "working_dir") {
		t.Errorf("start with a missing working directory: %v", err)
	}
	if st := e.status(id); st.Reason != "StartError" {
		t.Errorf("status after a failed start: %s %q", st.State, st.Reason)
	}
}

// TestNoViewRefusesMounts: a runtime without filesystem views refuses a
// mount it could not make, unless told to keep the host's filesystem.
func TestNoViewRefusesMounts(t *testing.T) {
	e := newEnv(t) // no isolation
	sb, sbCfg := e.runSandbox("noview", nil)
	if _, err := e.c.PullImage(ctx(t), &runtimeapi.ImageSpec{Image: "busybox"}, nil, sbCfg); err != nil {
		t.Fatal(err)
	}
	dir := t.TempDir()
	cfg := containerConfig("vol", nil, "true")
	cfg.Mounts = []*runtimeapi.Mount{{ContainerPath: "/etc/config", HostPath: dir}}
	_, err := e.c.CreateContainer(ctx(t), sb, cfg, sbCfg)
	if status.Code(err) != codes.InvalidArgument || !strings.Contains(err.Error(), "config.mounts[0]") || !strings.Contains(err.Error(), "--host-filesystem") {
		t.Errorf("CreateContainer with a mount and no view: %v", err)
	}
	// The same path, and the termination message file, need no view.
	msg := filepath.Join(dir, "msg")
	ok := containerConfig("same", nil, "true")
	ok.Annotations = map[string]string{"io.kubernetes.container.terminationMessagePath": "/dev/termination-log"}
	ok.Mounts = []*runtimeapi.Mount{{ContainerPath: dir, HostPath: dir}, {ContainerPath: "/dev/termination-log", HostPath: msg}}
	e.create(sb, sbCfg, ok)
}

func TestDeadHolderMakesSandboxNotReady(t *testing.T) {
	e := newIsolatedEnv(t)
	sb, sbCfg := e.runSandbox("holder", nil)
	e.run(sb, sbCfg, containerConfig("c", nil, "sleep", "60"))
	proctest.KillHolder(t, e.c, sb)
	testutil.Eventually(t, 10*time.Second, func() error {
		st, err := e.rawRuntime().PodSandboxStatus(ctx(t), &runtimeapi.PodSandboxStatusRequest{PodSandboxId: sb})
		if err != nil {
			return err
		}
		if st.Status.State != runtimeapi.PodSandboxState_SANDBOX_NOTREADY {
			return fmt.Errorf("sandbox %s", st.Status.State)
		}
		return nil
	})
	list, err := e.c.ListPodSandbox(ctx(t), &runtimeapi.PodSandboxFilter{State: &runtimeapi.PodSandboxStateValue{State: runtimeapi.PodSandboxState_SANDBOX_READY}})
	if err != nil || len(list) != 0 {
		t.Errorf("READY sandboxes after the holder died: %v, %v", list, err)
	}
	if _, err := e.c.CreateContainer(ctx(t), sb, containerConfig("late", nil, "true"), sbCfg); status.Code(err) != codes.FailedPrecondition {
		t.Errorf("CreateContainer in a sandbox whose holder died: %v", err)
	}
}

func TestCgroupParentTermAndInfo(t *testing.T) {
	e := newIsolatedEnv(t)
	parent := "actorlet-test-parent-" + fmt.Sprint(os.Getpid())
	t.Cleanup(func() {
		for _, c := range []string{"memory", "cpu", "cpuacct", "pids"} {
			_ = os.Remove(filepath.Join("/sys/fs/cgroup", c, parent))
		}
	})
	cfg := e.sandboxConfig("cgparent", nil)
	cfg.Linux.CgroupParent = "/" + parent
	sb, err := e.c.RunPodSandbox(ctx(t), cfg, "")
	if err != nil {
		t.Fatal(err)
	}
	c := containerConfig("tty", nil, "sleep", "60")
	c.Tty = true
	id := e.run(sb, cfg, c)
	if _, err := os.Stat(filepath.Join("/sys/fs/cgroup/memory", parent, id)); err != nil {
		t.Errorf("container cgroup under the sandbox's cgroup_parent: %v", err)
	}
	env := e.execOut(id, "sh", "-c", "for p in /proc/[0-9]*; do tr '\\0' '\\n' < $p/environ; done | grep '^TERM=' | sort -u")
	if env != "TERM=xterm" {
		t.Errorf("TERM of a tty container = %q, want TERM=xterm", env)
	}
	resp, err := e.c.ContainerStatus(ctx(t), id, true)
	if err != nil {
		t.Fatal(err)
	}
	var info struct {
		Pid       int    `json:"pid"`
		SandboxID string `json:"sandboxID"`
	}
	if err := json.Unmarshal([]byte(resp.Info["info"]), &info); err != nil || info.Pid == 0 || info.SandboxID != sb {
		t.Errorf("verbose info %q: %+v, %v", resp.Info["info"], info, err)
	}
	for _, bad := range []string{"a/../../etc", "kubepods.slice", strings.Repeat("x", 2000)} {
		c := e.sandboxConfig("bad-parent", nil)
		c.Linux.CgroupParent = bad
		if _, err := e.c.RunPodSandbox(ctx(t), c, ""); status.Code(err) != codes.InvalidArgument || !strings.Contains(err.Error(), "cgroup_parent") {
			t.Errorf("RunPodSandbox with cgroup_parent %.20q: %v", bad, err)
		}
	}
	if err := e.c.RemovePodSandbox(context.Background(), sb); err != nil {
		t.Fatal(err)
	}
}

// TestViewWhileHostMountsChurn: mounts that come and go on the host while
// containers start (another runtime's container root filesystems, as
// containerd mounts and removes them under /run) never fail a start: a
// mount gone between the view's reading of the host's mounts and its bind
// is left out. (A chaos run on a host with a containerd beside it failed
// starts with "bind the host's …/rootfs: no such file or directory".)
func TestViewWhileHostMountsChurn(t *testing.T) {
	e := newViewEnv(t)
	churn, err := os.MkdirTemp("/var/tmp", "actorlet-churn-")
	if err != nil {
		t.Fatal(err)
	}
	stop := make(chan struct{})
	done := make(chan int)
	go func() {
		n := 0
		for ; ; n++ {
			select {
			case <-stop:
				done <- n
				return
			default:
			}
			// Eight mounts at a time, each living a few hundred
			// microseconds: some are read by a view and gone before
			// its bind.
			d := filepath.Join(churn, fmt.Sprint("m", n%8))
			_ = syscall.Unmount(d, syscall.MNT_DETACH)
			_ = os.Remove(d)
			_ = os.Mkdir(d, 0o700)
			_ = syscall.Mount("tmpfs", d, "tmpfs", 0, "size=64k")
			time.Sleep(50 * time.Microsecond)
		}
	}()
	var n int
	end := sync.OnceFunc(func() { close(stop); n = <-done })
	t.Cleanup(func() {
		end() // first: the loop would mount again
		for i := 0; i < 8; i++ {
			_ = syscall.Unmount(filepath.Join(churn, fmt.Sprint("m", i)), syscall.MNT_DETACH)
		}
		_ = os.RemoveAll(churn)
	})
	sb, sbCfg := e.runSandbox("churn", nil)
	const starts = 20
	for i := 0; i < starts; i++ {
		e.run(sb, sbCfg, containerConfig(fmt.Sprint("c", i), nil, "sleep", "60"))
	}
	end()
	t.Logf("%d containers started while %d host mounts came and went", starts, n)
}
