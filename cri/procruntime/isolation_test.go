package procruntime_test

import (
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"

	runtimeapi "k8s.io/cri-api/pkg/apis/runtime/v1"

	"github.com/actorlet/actorlet/cri/procruntime"
	"github.com/actorlet/actorlet/test/cristream"
)

// newIsolatedEnv is newEnv with every isolation this machine allows (as
// root); the test is skipped without root.
func newIsolatedEnv(t *testing.T) *env {
	t.Helper()
	iso := procruntime.DefaultIsolation()
	if !iso.Namespaces || !iso.Cgroups {
		t.Skipf("isolation needs root, nsenter and cgroup v1 (have %s)", iso)
	}
	dir := t.TempDir()
	e := &env{t: t, root: filepath.Join(dir, "state"), sock: filepath.Join(dir, "cri.sock"), logDir: filepath.Join(dir, "logs"), iso: iso}
	e.start()
	return e
}

func (e *env) execOut(id string, cmd ...string) string {
	e.t.Helper()
	out, stderr, err := e.c.ExecSync(ctx(e.t), id, cmd, 10*time.Second)
	if err != nil {
		e.t.Fatalf("ExecSync %q: %v (stderr %q)", cmd, err, stderr)
	}
	return strings.TrimSpace(string(out))
}

// ttyExecEndsWithItsClient opens a shell on a terminal in container id,
// then closes the client without exiting the shell: the session must end
// (its terminal hangs up) within 20 s.
func (e *env) ttyExecEndsWithItsClient(t *testing.T, id string) {
	t.Helper()
	resp, err := e.rawRuntime().Exec(ctx(t), &runtimeapi.ExecRequest{ContainerId: id, Cmd: []string{"sh"}, Tty: true, Stdin: true, Stdout: true})
	if err != nil {
		t.Fatal(err)
	}
	term := cristream.OpenTerminal(t, resp.Url, nil)
	term.TypeUntil(t, "echo in-$((1+1))", "in-2")
	term.Close() // the client goes away without exiting the shell
	select {
	case <-term.Done():
	case <-time.After(20 * time.Second):
		t.Fatal("the session outlived its client's input by 20s")
	}
}

func TestIsolation(t *testing.T) {
	e := newIsolatedEnv(t)
	hostName, _ := os.Hostname()
	pa := e.sandboxConfig("pod-a", nil)
	pa.DnsConfig = &runtimeapi.DNSConfig{Servers: []string{"10.10.10.10"}, Searches: []string{"pod.example"}}
	pa.Linux.Sysctls = map[string]string{"kernel.shm_rmid_forced": "1", "fs.mqueue.msg_max": "100"}
	sbA, err := e.c.RunPodSandbox(ctx(t), pa, "")
	if err != nil {
		t.Fatal(err)
	}
	cfgA := pa
	sbB, cfgB := e.runSandbox("pod-b", nil)
	a := containerConfig("a", nil, "sleep", "61")
	a.Linux = &runtimeapi.LinuxContainerConfig{Resources: &runtimeapi.LinuxContainerResources{MemoryLimitInBytes: 256 << 20, CpuShares: 512}}
	idA := e.run(sbA, cfgA, a)
	idB := e.run(sbB, cfgB, containerConfig("b", nil, "sleep", "62"))

	t.Run("own hostname, the host's untouched", func(t *testing.T) {
		if got := e.execOut(idA, "cat", "/proc/sys/kernel/hostname"); got != "pod-a" {
			t.Errorf("hostname in pod-a = %q", got)
		}
		e.execOut(idB, "sh", "-c", "echo renamed > /proc/sys/kernel/hostname")
		if got := e.execOut(idB, "cat", "/proc/sys/kernel/hostname"); got != "renamed" {
			t.Errorf("hostname in pod-b after renaming = %q", got)
		}
		if now, _ := os.Hostname(); now != hostName {
			t.Errorf("the host was renamed to %q", now)
		}
	})

	t.Run("pod sysctls in its own namespaces only", func(t *testing.T) {
		if got := e.execOut(idA, "cat", "/proc/sys/fs/mqueue/msg_max"); got != "100" {
			t.Errorf("fs.mqueue.msg_max in pod-a = %q", got)
		}
		if got := e.execOut(idB, "cat", "/proc/sys/fs/mqueue/msg_max"); got == "100" {
			t.Error("pod-b sees pod-a's fs.mqueue.msg_max")
		}
		for _, bad := range []map[string]string{{"net.ipv4.ip_forward": "1"}, {"kernel.shm_rmid_forced/../x": "1"}} {
			c := e.sandboxConfig("bad-sysctl", nil)
			c.Linux.Sysctls = bad
			if _, err := e.c.RunPodSandbox(ctx(t), c, ""); err == nil || !strings.Contains(err.Error(), "config.linux.sysctls") {
				t.Errorf("RunPodSandbox with sysctls %v: %v, want refused", bad, err)
			}
		}
	})

	t.Run("OOM killed", func(t *testing.T) {
		cfg := containerConfig("oom", nil, "tail", "/dev/zero")
		cfg.Linux = &runtimeapi.LinuxContainerConfig{Resources: &runtimeapi.LinuxContainerResources{MemoryLimitInBytes: 32 << 20}}
		id := e.run(sbA, cfgA, cfg)
		if st := e.waitExited(id); st.ExitCode != 137 || st.Reason != "OOMKilled" {
			t.Errorf("exit %d %q, want 137 OOMKilled", st.ExitCode, st.Reason)
		}
	})

	t.Run("pod DNS config", func(t *testing.T) {
		if got := e.execOut(idA, "cat", "/etc/resolv.conf"); got != "nameserver 10.10.10.10\nsearch pod.example" {
			t.Errorf("resolv.conf in pod-a = %q", got)
		}
		if got := e.execOut(idB, "cat", "/etc/resolv.conf"); strings.Contains(got, "10.10.10.10") {
			t.Errorf("pod-b sees pod-a's resolv.conf: %q", got)
		}
	})

	t.Run("sees only its pod's processes", func(t *testing.T) {
		ps := e.execOut(idA, "sh", "-c", "cat /proc/[0-9]*/cmdline | tr '\\0' ' '")
		if !strings.Contains(ps, "sleep 61") || strings.Contains(ps, "sleep 62") || strings.Contains(ps, "procruntime.test") {
			t.Errorf("processes seen from pod-a: %q", ps)
		}
		if init := e.execOut(idA, "cat", "/proc/1/cmdline"); !strings.HasPrefix(init, "actorlet-sandbox") {
			t.Errorf("PID 1 of pod-a is %q", init)
		}
	})

	t.Run("cgroup with limits and stats", func(t *testing.T) {
		cg := e.execOut(idA, "cat", "/proc/self/cgroup")
		if !strings.Contains(cg, "memory:/actorlet/"+idA) {
			t.Errorf("cgroups of an exec in a: %s", cg)
		}
		b, err := os.ReadFile(filepath.Join("/sys/fs/cgroup/memory/actorlet", idA, "memory.limit_in_bytes"))
		if err != nil || strings.TrimSpace(string(b)) != "268435456" {
			t.Errorf("memory limit %q, %v", b, err)
		}
		rs := e.rawRuntime()
		if _, err := rs.UpdateContainerResources(ctx(t), &runtimeapi.UpdateContainerResourcesRequest{ContainerId: idA, Linux: &runtimeapi.LinuxContainerResources{MemoryLimitInBytes: 128 << 20}}); err != nil {
			t.Fatal(err)
		}
		b, _ = os.ReadFile(filepath.Join("/sys/fs/cgroup/memory/actorlet", idA, "memory.limit_in_bytes"))
		if strings.TrimSpace(string(b)) != "134217728" {
			t.Errorf("memory limit after update %q", b)
		}
		if st := e.status(idA); st.Resources.GetLinux().GetMemoryLimitInBytes() != 128<<20 {
			t.Errorf("status resources %v", st.Resources)
		}
		stats, err := rs.ContainerStats(ctx(t), &runtimeapi.ContainerStatsRequest{ContainerId: idA})
		if err != nil || stats.Stats.Memory.WorkingSetBytes.GetValue() == 0 || stats.Stats.Cpu.UsageCoreNanoSeconds.GetValue() == 0 {
			t.Errorf("ContainerStats = %v, %v", stats, err)
		}
	})

	t.Run("tty exec ends with its client's input", func(t *testing.T) {
		e.ttyExecEndsWithItsClient(t, idA)
		ps := e.execOut(idA, "sh", "-c", "for f in /proc/[0-9]*/cmdline; do tr '\\0' ' ' < $f; echo; done")
		for _, line := range strings.Split(ps, "\n") {
			if strings.TrimSpace(line) == "sh" {
				t.Errorf("the shell outlived its session; the pod's processes:\n%s", ps)
			}
		}
	})

	t.Run("exec as the container's user", func(t *testing.T) {
		cfg := containerConfig("grp", nil, "sleep", "63")
		cfg.Linux = &runtimeapi.LinuxContainerConfig{SecurityContext: &runtimeapi.LinuxContainerSecurityContext{
			RunAsUser: &runtimeapi.Int64Value{Value: 0}, RunAsGroup: &runtimeapi.Int64Value{Value: 4321},
		}}
		id := e.run(sbA, cfgA, cfg)
		if got := e.execOut(id, "id", "-g"); got != "4321" {
			t.Errorf("exec gid %q, want 4321", got)
		}
	})

	t.Run("stop, exit codes and cleanup", func(t *testing.T) {
		if err := e.c.StopContainer(ctx(t), idB, 5); err != nil {
			t.Fatal(err)
		}
		if st := e.waitExited(idB); st.ExitCode != 143 {
			t.Errorf("stopped container exit %d, want 143 (SIGTERM)", st.ExitCode)
		}
		if err := e.c.RemovePodSandbox(ctx(t), sbB); err != nil {
			t.Fatal(err)
		}
		if _, err := os.Stat(filepath.Join("/sys/fs/cgroup/memory/actorlet", idB)); !os.IsNotExist(err) {
			t.Errorf("cgroup of a removed container: %v", err)
		}
		exited := e.run(sbA, cfgA, containerConfig("exit3", nil, "sh", "-c", "exit 3"))
		if st := e.waitExited(exited); st.ExitCode != 3 {
			t.Errorf("exit code %d, want 3", st.ExitCode)
		}
	})
}
