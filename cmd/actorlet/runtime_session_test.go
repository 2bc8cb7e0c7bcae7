package main

import (
	"bytes"
	"context"
	"fmt"
	"io"
	"net"
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"google.golang.org/grpc/codes"
	"google.golang.org/grpc/status"
	"k8s.io/client-go/tools/remotecommand"
	internalapi "k8s.io/cri-api/pkg/apis"
	runtimeapi "k8s.io/cri-api/pkg/apis/runtime/v1"
	criclient "k8s.io/cri-client/pkg"
	crilogs "k8s.io/cri-client/pkg/logs"

	"github.com/actorlet/actorlet/cri/procruntime"
	"github.com/actorlet/actorlet/cri/procruntime/proctest"
	"github.com/actorlet/actorlet/test/cristream"
	"github.com/actorlet/actorlet/test/testutil"
)

// TestMain lets the process runtime re-execute this test binary as its
// per-container shim.
func TestMain(m *testing.M) { proctest.Main(m) }

// TestOperatorSessionThroughCRIClient drives `actorlet runtime` on a real
// unix socket with k8s.io/cri-client, the client crictl, critest and the
// kubelet use, through everything an operator does with crictl.
func TestOperatorSessionThroughCRIClient(t *testing.T) {
	dir := t.TempDir()
	sock := filepath.Join(dir, "cri.sock")
	endpoint := "unix://" + sock
	runCtx, stopRuntime := context.WithCancel(context.Background())
	served := make(chan error, 1)
	go func() {
		served <- runRuntime(runCtx, []string{"--listen", endpoint, "--root-dir", filepath.Join(dir, "state")})
	}()
	t.Cleanup(func() {
		stopRuntime()
		if err := <-served; err != nil {
			t.Errorf("actorlet runtime: %v", err)
		}
	})
	ctx, cancel := context.WithTimeout(context.Background(), 60*time.Second)
	defer cancel()

	// connect: the runtime service checks Version, the image service
	// ImageFsInfo (crictl fails here if it is unimplemented).
	var rs internalapi.RuntimeService
	var is internalapi.ImageManagerService
	testutil.Eventually(t, 10*time.Second, func() error {
		if _, err := os.Stat(sock); err != nil {
			return err
		}
		var err error
		if rs, err = criclient.NewRemoteRuntimeServiceBuilder().WithEndpoint(endpoint).WithConnectionTimeout(5 * time.Second).Build(ctx); err != nil {
			return err
		}
		is, err = criclient.NewRemoteImageServiceBuilder().WithEndpoint(endpoint).WithConnectionTimeout(5 * time.Second).Build(ctx)
		return err
	})
	defer rs.Close(ctx)
	defer is.Close(ctx)
	// Whatever happens below, leave no process behind.
	t.Cleanup(func() {
		c, cancel := context.WithTimeout(context.Background(), 20*time.Second)
		defer cancel()
		pods, _ := rs.ListPodSandbox(c, nil)
		for _, p := range pods {
			_ = rs.RemovePodSandbox(c, p.Id)
		}
	})

	// info
	v, err := rs.Version(ctx, "v1")
	must(t, "Version", err)
	if v.RuntimeName != procruntime.RuntimeName {
		t.Errorf("RuntimeName %q", v.RuntimeName)
	}
	st, err := rs.Status(ctx, true)
	must(t, "Status", err)
	if !conditionTrue(st.Status, runtimeapi.RuntimeReady) || len(st.RuntimeHandlers) == 0 || st.Info["streamAddress"] == "" {
		t.Errorf("Status = %v", st)
	}
	if rc, err := rs.RuntimeConfig(ctx); err != nil || rc.Linux.GetCgroupDriver() != runtimeapi.CgroupDriver_CGROUPFS {
		t.Errorf("RuntimeConfig = %v, %v", rc, err)
	}
	fs, err := is.ImageFsInfo(ctx)
	must(t, "ImageFsInfo", err)
	if len(fs.ImageFilesystems) != 1 || fs.ImageFilesystems[0].UsedBytes.GetValue() == 0 {
		t.Errorf("ImageFsInfo = %v", fs)
	}

	// images: pull, normalised references, status (cri-client rejects a
	// size of 0), list.
	ref, err := is.PullImage(ctx, &runtimeapi.ImageSpec{Image: "busybox"}, nil, nil)
	must(t, "PullImage", err)
	for _, name := range []string{"busybox", "busybox:latest", "docker.io/library/busybox:latest", ref, ref[len("sha256:"):][:12]} {
		img, err := is.ImageStatus(ctx, &runtimeapi.ImageSpec{Image: name}, false)
		if err != nil || img.GetImage().GetId() != ref || img.Image.Size == 0 || img.Image.RepoTags[0] != "docker.io/library/busybox:latest" {
			t.Errorf("ImageStatus(%s) = %v, %v", name, img, err)
		}
	}
	const digestRef = "busybox@sha256:1fcf5df59121b92d61e066df1788e8df0cc35623f5d62d9679a41e163b6a0cdb"
	dref, err := is.PullImage(ctx, &runtimeapi.ImageSpec{Image: digestRef}, nil, nil)
	must(t, "PullImage by digest", err)
	if img, err := is.ImageStatus(ctx, &runtimeapi.ImageSpec{Image: dref}, false); err != nil || len(img.GetImage().GetRepoDigests()) != 1 || len(img.GetImage().GetRepoTags()) != 0 {
		t.Errorf("ImageStatus of a digest reference = %v, %v", img, err)
	}
	if imgs, err := is.ListImages(ctx, nil); err != nil || len(imgs) != 2 {
		t.Errorf("ListImages = %v, %v", imgs, err)
	}

	// runp
	logDir := filepath.Join(dir, "logs")
	sbConfig := &runtimeapi.PodSandboxConfig{
		Metadata:     &runtimeapi.PodSandboxMetadata{Name: "session", Namespace: "default", Uid: "uid-session"},
		Hostname:     "session",
		LogDirectory: logDir,
		Labels:       map[string]string{"app": "session"},
	}
	if _, err := rs.RunPodSandbox(ctx, sbConfig, "kata"); status.Code(err) != codes.InvalidArgument {
		t.Errorf("RunPodSandbox with an unknown handler = %v, want InvalidArgument", err)
	}
	sb, err := rs.RunPodSandbox(ctx, sbConfig, "")
	must(t, "RunPodSandbox", err)

	// create: a never-pulled image is refused; a shell with a tty and stdin.
	shell := &runtimeapi.ContainerConfig{
		Metadata: &runtimeapi.ContainerMetadata{Name: "shell"},
		Image:    &runtimeapi.ImageSpec{Image: "docker.io/library/busybox"},
		Command:  []string{"sh", "-c", "echo started; exec sh"},
		LogPath:  "shell/0.log",
		Tty:      true,
		Stdin:    true,
		Labels:   map[string]string{"role": "shell"},
	}
	if _, err := rs.CreateContainer(ctx, sb, &runtimeapi.ContainerConfig{Metadata: &runtimeapi.ContainerMetadata{Name: "x"}, Image: &runtimeapi.ImageSpec{Image: "never-pulled"}, Command: []string{"true"}}, sbConfig); status.Code(err) != codes.NotFound {
		t.Errorf("CreateContainer of a never-pulled image = %v, want NotFound", err)
	}
	shellID, err := rs.CreateContainer(ctx, sb, shell, sbConfig)
	must(t, "CreateContainer", err)
	worker := &runtimeapi.ContainerConfig{
		Metadata: &runtimeapi.ContainerMetadata{Name: "worker"},
		Image:    &runtimeapi.ImageSpec{Image: "busybox:latest"},
		Command:  []string{"sh", "-c", "echo hello from worker; echo oops >&2; exec sleep 300"},
		LogPath:  "worker/0.log",
	}
	workerID, err := rs.CreateContainer(ctx, sb, worker, sbConfig)
	must(t, "CreateContainer", err)

	// start, list, inspect
	must(t, "StartContainer", rs.StartContainer(ctx, shellID))
	must(t, "StartContainer", rs.StartContainer(ctx, workerID))
	if cs, err := rs.ListContainers(ctx, &runtimeapi.ContainerFilter{LabelSelector: map[string]string{"role": "shell"}}); err != nil || len(cs) != 1 || cs[0].Id != shellID {
		t.Errorf("ListContainers(role=shell) = %v, %v", cs, err)
	}
	if pods, err := rs.ListPodSandbox(ctx, nil); err != nil || len(pods) != 1 {
		t.Errorf("ListPodSandbox = %v, %v", pods, err)
	}
	cst, err := rs.ContainerStatus(ctx, workerID, true)
	must(t, "ContainerStatus", err)
	if cst.Status.State != runtimeapi.ContainerState_CONTAINER_RUNNING || cst.Status.ImageRef != ref {
		t.Errorf("ContainerStatus = %v", cst.Status)
	}
	if _, err := rs.PodSandboxStatus(ctx, sb, true); err != nil {
		t.Errorf("PodSandboxStatus: %v", err)
	}

	// logs, read as crictl logs reads them
	testutil.Eventually(t, 10*time.Second, func() error {
		var out, errb bytes.Buffer
		opts := &crilogs.LogOptions{}
		if err := crilogs.ReadLogs(ctx, cst.Status.LogPath, workerID, opts, rs, &out, &errb); err != nil {
			return err
		}
		if out.String() != "hello from worker\n" || errb.String() != "oops\n" {
			return fmt.Errorf("logs: stdout %q stderr %q", out.String(), errb.String())
		}
		return nil
	})

	// exec, sync
	stdout, _, err := rs.ExecSync(ctx, workerID, []string{"sh", "-c", "echo $HOSTNAME"}, 10*time.Second)
	must(t, "ExecSync", err)
	if strings.TrimSpace(string(stdout)) != "session" {
		t.Errorf("ExecSync stdout %q", stdout)
	}
	if _, _, err := rs.ExecSync(ctx, workerID, []string{"sh", "-c", "exit 3"}, 10*time.Second); err == nil {
		t.Error("ExecSync exit 3 succeeded")
	}

	// exec, streaming with a tty: the terminal size set and the exit code
	// come back.
	execResp, err := rs.Exec(ctx, &runtimeapi.ExecRequest{ContainerId: workerID, Cmd: []string{"sh"}, Tty: true, Stdin: true, Stdout: true})
	must(t, "Exec", err)
	if code := ttySession(t, execResp.Url, "stty size", "24 80", "exit 6"); code != 6 {
		t.Errorf("exec exit code %d, want 6", code)
	}

	// attach to the shell container's terminal
	attResp, err := rs.Attach(ctx, &runtimeapi.AttachRequest{ContainerId: shellID, Tty: true, Stdin: true, Stdout: true})
	must(t, "Attach", err)
	if code := ttySession(t, attResp.Url, "echo attached-$((6*7))", "attached-42", "exit 9"); code != 0 {
		t.Errorf("attach session ended with %d", code)
	}
	testutil.Eventually(t, 10*time.Second, func() error {
		s, err := rs.ContainerStatus(ctx, shellID, false)
		if err != nil {
			return err
		}
		if s.Status.State != runtimeapi.ContainerState_CONTAINER_EXITED || s.Status.ExitCode != 9 {
			return fmt.Errorf("shell is %s (%d)", s.Status.State, s.Status.ExitCode)
		}
		return nil
	})

	// port-forward to a server in the pod (the host's loopback: pods share it)
	port := testutil.ServeTCP(t, func(c net.Conn) { _, _ = io.WriteString(c, "hello through port-forward\n") })
	pfResp, err := rs.PortForward(ctx, &runtimeapi.PortForwardRequest{PodSandboxId: sb, Port: []int32{int32(port)}})
	must(t, "PortForward", err)
	local := cristream.PortForward(t, pfResp.Url, port)
	conn, err := net.Dial("tcp", fmt.Sprintf("127.0.0.1:%d", local))
	must(t, "dial forwarded port", err)
	_ = conn.SetReadDeadline(time.Now().Add(10 * time.Second))
	got, _ := io.ReadAll(conn)
	conn.Close()
	if string(got) != "hello through port-forward\n" {
		t.Errorf("through port-forward: %q", got)
	}

	// stats
	cstats, err := rs.ContainerStats(ctx, workerID)
	must(t, "ContainerStats", err)
	if cstats.Memory.GetWorkingSetBytes().GetValue() == 0 || cstats.Cpu.GetTimestamp() == 0 {
		t.Errorf("ContainerStats = %v", cstats)
	}
	if list, err := rs.ListContainerStats(ctx, &runtimeapi.ContainerStatsFilter{PodSandboxId: sb}); err != nil || len(list) != 2 {
		t.Errorf("ListContainerStats = %v, %v", list, err)
	}
	if list, err := rs.ListPodSandboxStats(ctx, nil); err != nil || len(list) != 1 || len(list[0].GetLinux().GetContainers()) != 2 {
		t.Errorf("ListPodSandboxStats = %v, %v", list, err)
	}
	must(t, "UpdateContainerResources", rs.UpdateContainerResources(ctx, workerID, &runtimeapi.ContainerResources{Linux: &runtimeapi.LinuxContainerResources{MemoryLimitInBytes: 64 << 20}}))

	// stop (and of unknown IDs: CRI stops are idempotent), remove
	must(t, "StopContainer", rs.StopContainer(ctx, workerID, 1))
	must(t, "StopContainer unknown", rs.StopContainer(ctx, "0123456789abcdef", 1))
	must(t, "StopPodSandbox unknown", rs.StopPodSandbox(ctx, "0123456789abcdef"))
	must(t, "RemoveContainer", rs.RemoveContainer(ctx, workerID))
	must(t, "StopPodSandbox", rs.StopPodSandbox(ctx, sb))
	must(t, "RemovePodSandbox", rs.RemovePodSandbox(ctx, sb))
	if pods, err := rs.ListPodSandbox(ctx, nil); err != nil || len(pods) != 0 {
		t.Errorf("ListPodSandbox after removal = %v, %v", pods, err)
	}

	// remove image
	must(t, "RemoveImage", is.RemoveImage(ctx, &runtimeapi.ImageSpec{Image: "busybox"}))
	if img, err := is.ImageStatus(ctx, &runtimeapi.ImageSpec{Image: "docker.io/library/busybox:latest"}, false); err != nil || img.Image != nil {
		t.Errorf("ImageStatus after removal = %v, %v", img, err)
	}
}

func must(t *testing.T, what string, err error) {
	t.Helper()
	if err != nil {
		t.Fatalf("%s: %v", what, err)
	}
}

func conditionTrue(s *runtimeapi.RuntimeStatus, typ string) bool {
	for _, c := range s.GetConditions() {
		if c.Type == typ {
			return c.Status
		}
	}
	return false
}

// ttySession runs a terminal session of 80x24 on a streaming URL as crictl
// exec -it does: it types cmd until want shows, then quit, and returns the
// exit code.
func ttySession(t *testing.T, rawURL, cmd, want, quit string) int {
	t.Helper()
	term := cristream.OpenTerminal(t, rawURL, &remotecommand.TerminalSize{Width: 80, Height: 24})
	term.TypeUntil(t, cmd, want)
	term.Type(quit)
	return cristream.ExitCode(t, <-term.Done())
}
