package procruntime_test

import (
	"crypto/sha256"
	"encoding/hex"
	"fmt"
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/actorlet/actorlet/test/testutil"

	"google.golang.org/grpc/codes"
	"google.golang.org/grpc/status"
	runtimeapi "k8s.io/cri-api/pkg/apis/runtime/v1"
)

func TestImageReferences(t *testing.T) {
	e := newEnv(t)
	ref, err := e.c.PullImage(ctx(t), &runtimeapi.ImageSpec{Image: "busybox"}, nil, nil)
	if err != nil {
		t.Fatal(err)
	}
	// One image however it is spelled.
	for _, name := range []string{"busybox:latest", "docker.io/library/busybox", "docker.io/library/busybox:latest"} {
		again, err := e.c.PullImage(ctx(t), &runtimeapi.ImageSpec{Image: name}, nil, nil)
		if err != nil || again != ref {
			t.Errorf("PullImage(%s) = %s, %v; want %s", name, again, err, ref)
		}
	}
	if list, _ := e.c.ListImages(ctx(t), nil); len(list) != 1 {
		t.Errorf("ListImages = %v, want one image", list)
	}
	// Hostile and malformed references are refused with the field named.
	for _, bad := range []string{"Busybox", "busybox@sha256:short", "busybox:" + strings.Repeat("x", 200), strings.Repeat("a/", 3000) + "b"} {
		_, err := e.c.PullImage(ctx(t), &runtimeapi.ImageSpec{Image: bad}, nil, nil)
		if status.Code(err) != codes.InvalidArgument || !strings.Contains(err.Error(), "image.image") {
			t.Errorf("PullImage(%.40q) = %v, want InvalidArgument naming image.image", bad, err)
		}
	}
	// An old record kept under the name as typed is found by any spelling
	// after a restart (normalised on load).
	sum := sha256.Sum256([]byte("alpine"))
	old := hex.EncodeToString(sum[:])
	rec := fmt.Sprintf(`{"id":"sha256:%s","name":"alpine","pulledAt":1}`, old)
	if err := os.WriteFile(filepath.Join(e.root, "images", old+".json"), []byte(rec), 0o600); err != nil {
		t.Fatal(err)
	}
	e.rt.Stop()
	e.start()
	for _, name := range []string{"busybox", "alpine:latest"} {
		st, err := e.c.ImageStatus(ctx(t), &runtimeapi.ImageSpec{Image: name}, false)
		if err != nil || st.Image == nil || st.Image.RepoTags[0] != "docker.io/library/"+strings.TrimSuffix(name, ":latest")+":latest" {
			t.Errorf("ImageStatus(%s) after restart = %v, %v", name, st, err)
		}
	}
}

func TestStatsAndFsInfo(t *testing.T) {
	e := newEnv(t)
	sb, sbc := e.runSandbox("stats", nil)
	id := e.run(sb, sbc, containerConfig("spin", nil, "sh", "-c", "i=0; while [ $i -lt 200000 ]; do i=$((i+1)); done; exec sleep 60"))
	rs := e.rawRuntime()
	var cpu uint64
	for i := 0; i < 100 && cpu == 0; i++ {
		resp, err := rs.ContainerStats(ctx(t), &runtimeapi.ContainerStatsRequest{ContainerId: id})
		if err != nil {
			t.Fatal(err)
		}
		cpu = resp.Stats.Cpu.UsageCoreNanoSeconds.GetValue()
		if resp.Stats.Memory.WorkingSetBytes.GetValue() == 0 {
			t.Fatalf("no memory usage: %v (container %v)", resp.Stats, e.status(id))
		}
	}
	if cpu == 0 {
		t.Error("a spinning container used no CPU")
	}
	ps, err := rs.PodSandboxStats(ctx(t), &runtimeapi.PodSandboxStatsRequest{PodSandboxId: sb})
	if err != nil || ps.Stats.Linux.Process.ProcessCount.GetValue() == 0 {
		t.Errorf("PodSandboxStats = %v, %v", ps, err)
	}
	conn := e.rawImages()
	fs, err := conn.ImageFsInfo(ctx(t), &runtimeapi.ImageFsInfoRequest{})
	if err != nil || fs.ImageFilesystems[0].InodesUsed.GetValue() < 2 || fs.ContainerFilesystems[0].UsedBytes.GetValue() == 0 {
		t.Errorf("ImageFsInfo = %v, %v", fs, err)
	}
}

func TestShimIsNamedInPs(t *testing.T) {
	e := newEnv(t)
	sb, sbc := e.runSandbox("ps", nil)
	id := e.run(sb, sbc, containerConfig("sleep", nil, "sleep", "60"))
	// The shim, or with namespaces nsenter's child, is "actorlet-shim <id>".
	_, shim := e.pids(id)
	found := false
	entries, _ := os.ReadDir("/proc")
	for _, d := range entries {
		var pid int
		if _, err := fmt.Sscan(d.Name(), &pid); err != nil {
			continue
		}
		if b, _ := readCmdline(pid); b == "actorlet-shim "+id {
			found = true
		}
	}
	if !found {
		b, _ := readCmdline(shim)
		t.Errorf("no process named \"actorlet-shim %s\" (the shim's pid %d is %q)", id, shim, b)
	}
}

func TestRunAsUser(t *testing.T) {
	e := newEnv(t)
	sb, sbc := e.runSandbox("user", nil)
	bad := containerConfig("bad", nil, "id")
	bad.Linux = &runtimeapi.LinuxContainerConfig{SecurityContext: &runtimeapi.LinuxContainerSecurityContext{RunAsGroup: &runtimeapi.Int64Value{Value: 5}}}
	if _, err := e.c.PullImage(ctx(t), bad.Image, nil, nil); err != nil {
		t.Fatal(err)
	}
	if _, err := e.c.CreateContainer(ctx(t), sb, bad, sbc); status.Code(err) != codes.InvalidArgument {
		t.Errorf("run_as_group without run_as_user: %v, want InvalidArgument", err)
	}
	if os.Geteuid() != 0 {
		t.Skip("switching user needs root")
	}
	// Another user can only run anything if it may enter "/" (not on every
	// machine this runs on); root with other groups always can.
	uid := int64(65534)
	if fi, err := os.Stat("/"); err != nil || fi.Mode().Perm()&0o001 == 0 {
		t.Logf("/ is %v: running as uid 0 with other groups", fi.Mode())
		uid = 0
	}
	cfg := containerConfig("nobody", nil, "sh", "-c", "id -u; id -g; id -G; exec sleep 60")
	cfg.Linux = &runtimeapi.LinuxContainerConfig{SecurityContext: &runtimeapi.LinuxContainerSecurityContext{
		RunAsUser:          &runtimeapi.Int64Value{Value: uid},
		RunAsGroup:         &runtimeapi.Int64Value{Value: 1234},
		SupplementalGroups: []int64{5678},
	}}
	id := e.run(sb, sbc, cfg)
	out, _, err := e.c.ExecSync(ctx(t), id, []string{"sh", "-c", "id -u; id -g"}, 10*time.Second)
	if want := fmt.Sprintf("%d\n1234\n", uid); err != nil || string(out) != want {
		t.Errorf("exec as the container's user: %q, %v", out, err)
	}
	testutil.Eventually(t, 10*time.Second, func() error {
		logs := e.readLog(sbc, cfg)
		if !strings.Contains(logs, fmt.Sprintf("F %d\n", uid)) || !strings.Contains(logs, "F 1234\n") || !strings.Contains(logs, "5678") {
			return fmt.Errorf("log %q", logs)
		}
		return nil
	})
}

func TestHostileSandboxConfig(t *testing.T) {
	e := newEnv(t)
	for name, mutate := range map[string]func(*runtimeapi.PodSandboxConfig){
		"dns_config": func(c *runtimeapi.PodSandboxConfig) {
			c.DnsConfig = &runtimeapi.DNSConfig{Servers: []string{"1.1.1.1\nnameserver 6.6.6.6"}}
		},
		"dns_config ": func(c *runtimeapi.PodSandboxConfig) {
			c.DnsConfig = &runtimeapi.DNSConfig{Searches: make([]string, 1000)}
		},
		"hostname": func(c *runtimeapi.PodSandboxConfig) { c.Hostname = strings.Repeat("h", 100) },
	} {
		c := e.sandboxConfig("hostile", nil)
		mutate(c)
		if _, err := e.c.RunPodSandbox(ctx(t), c, ""); status.Code(err) != codes.InvalidArgument || !strings.Contains(err.Error(), strings.TrimSpace(name)) {
			t.Errorf("%s: %v, want InvalidArgument naming it", name, err)
		}
	}
}

func TestSysctlsNeedIsolation(t *testing.T) {
	e := newEnv(t) // no isolation: a sysctl would change the host
	c := e.sandboxConfig("sysctl", nil)
	c.Linux.Sysctls = map[string]string{"kernel.shm_rmid_forced": "1"}
	if _, err := e.c.RunPodSandbox(ctx(t), c, ""); status.Code(err) != codes.InvalidArgument || !strings.Contains(err.Error(), "isolation") {
		t.Errorf("RunPodSandbox with a sysctl and no isolation: %v, want InvalidArgument", err)
	}
}
