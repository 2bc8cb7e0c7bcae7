package procruntime_test

import (
	"context"
	"errors"
	"fmt"
	"os"
	"path/filepath"
	"sort"
	"strconv"
	"strings"
	"syscall"
	"testing"
	"time"

	"github.com/actorlet/actorlet/test/testutil"

	runtimeapi "k8s.io/cri-api/pkg/apis/runtime/v1"

	"github.com/actorlet/actorlet/cri"
	"github.com/actorlet/actorlet/cri/procruntime"
)

func TestVersionAndStatus(t *testing.T) {
	e := newEnv(t)
	v, err := e.c.Version(ctx(t), "v1")
	if err != nil || v.RuntimeName != "actorlet-process" || v.RuntimeApiVersion != "v1" {
		t.Errorf("Version = %v, %v", v, err)
	}
	st, err := e.c.Status(ctx(t), false)
	if err != nil {
		t.Fatalf("Status: %v", err)
	}
	for _, c := range st.Status.Conditions {
		if !c.Status {
			t.Errorf("condition %s is false", c.Type)
		}
	}
	if len(st.Status.Conditions) != 2 {
		t.Errorf("conditions = %v, want RuntimeReady and NetworkReady", st.Status.Conditions)
	}
}

func TestListFilters(t *testing.T) {
	e := newEnv(t)
	sbA, cfgA := e.runSandbox("a", map[string]string{"app": "web"})
	sbB, cfgB := e.runSandbox("b", map[string]string{"app": "db"})
	running := e.run(sbA, cfgA, containerConfig("running", map[string]string{"tier": "front"}, "sleep", "30"))
	created := e.create(sbA, cfgA, containerConfig("created", map[string]string{"tier": "front"}, "true"))
	other := e.create(sbB, cfgB, containerConfig("other", map[string]string{"tier": "back"}, "true"))
	if err := e.c.StopPodSandbox(ctx(t), sbB); err != nil {
		t.Fatal(err)
	}

	ctrTests := []struct {
		name   string
		filter *runtimeapi.ContainerFilter
		want   []string
	}{
		{"all", nil, []string{running, created, other}},
		{"by id", &runtimeapi.ContainerFilter{Id: created}, []string{created}},
		{"by id prefix", &runtimeapi.ContainerFilter{Id: other[:12]}, []string{other}},
		{"by state", &runtimeapi.ContainerFilter{State: &runtimeapi.ContainerStateValue{State: runtimeapi.ContainerState_CONTAINER_RUNNING}}, []string{running}},
		{"by sandbox", &runtimeapi.ContainerFilter{PodSandboxId: sbB}, []string{other}},
		{"by label", &runtimeapi.ContainerFilter{LabelSelector: map[string]string{"tier": "front"}}, []string{running, created}},
		{"label and state", &runtimeapi.ContainerFilter{
			LabelSelector: map[string]string{"tier": "front"},
			State:         &runtimeapi.ContainerStateValue{State: runtimeapi.ContainerState_CONTAINER_CREATED},
		}, []string{created}},
		{"no match", &runtimeapi.ContainerFilter{LabelSelector: map[string]string{"tier": "nope"}}, nil},
	}
	for _, tt := range ctrTests {
		t.Run("containers/"+tt.name, func(t *testing.T) {
			list, err := e.c.ListContainers(ctx(t), tt.filter)
			assertSameIDs(t, list, err, tt.want)
		})
	}

	sbTests := []struct {
		name   string
		filter *runtimeapi.PodSandboxFilter
		want   []string
	}{
		{"all", nil, []string{sbA, sbB}},
		{"by id", &runtimeapi.PodSandboxFilter{Id: sbB}, []string{sbB}},
		{"ready", &runtimeapi.PodSandboxFilter{State: &runtimeapi.PodSandboxStateValue{State: runtimeapi.PodSandboxState_SANDBOX_READY}}, []string{sbA}},
		{"by label", &runtimeapi.PodSandboxFilter{LabelSelector: map[string]string{"app": "db"}}, []string{sbB}},
	}
	for _, tt := range sbTests {
		t.Run("sandboxes/"+tt.name, func(t *testing.T) {
			list, err := e.c.ListPodSandbox(ctx(t), tt.filter)
			assertSameIDs(t, list, err, tt.want)
		})
	}

	resp, err := e.c.PodSandboxStatus(ctx(t), sbA, false)
	if err != nil {
		t.Fatal(err)
	}
	s := resp.Status
	if s.Network.GetIp() != procruntime.FirstHostIP() || s.Metadata.GetName() != "a" || s.Labels["app"] != "web" ||
		s.Linux.GetNamespaces().GetOptions().GetNetwork() != runtimeapi.NamespaceMode_NODE || s.CreatedAt == 0 {
		t.Errorf("PodSandboxStatus = %v", s)
	}
	if len(resp.ContainersStatuses) != 2 {
		t.Errorf("PodSandboxStatus has %d container statuses, want 2", len(resp.ContainersStatuses))
	}
}

// assertSameIDs checks that a list call succeeded and listed the IDs in
// want, in any order.
func assertSameIDs[T interface{ GetId() string }](t *testing.T, list []T, err error, want []string) {
	t.Helper()
	if err != nil {
		t.Fatal(err)
	}
	var got []string
	for _, x := range list {
		got = append(got, x.GetId())
	}
	sort.Strings(got)
	want = append([]string(nil), want...)
	sort.Strings(want)
	if fmt.Sprint(got) != fmt.Sprint(want) {
		t.Errorf("got %v, want %v", got, want)
	}
}

func TestContainerEvents(t *testing.T) {
	e := newEnv(t)
	evCtx, cancel := context.WithCancel(context.Background())
	events := make(chan *runtimeapi.ContainerEventResponse, 100)
	connected := make(chan struct{})
	streamErr := make(chan error, 1)
	go func() {
		streamErr <- e.c.GetContainerEvents(evCtx, events, func(runtimeapi.RuntimeService_GetContainerEventsClient) { close(connected) })
	}()
	t.Cleanup(func() {
		cancel()
		<-streamErr
	})
	<-connected
	// The server registers the subscription when the stream's handler
	// runs; the callback fires when the stream is opened. Wait for the
	// subscription to be live by watching a sandbox event arrive.
	var sbID string
	var sb *runtimeapi.PodSandboxConfig
	testutil.Eventually(t, 5*time.Second, func() error {
		id, cfg := e.runSandbox(fmt.Sprintf("events-%d", time.Now().UnixNano()), nil)
		select {
		case ev := <-events:
			if ev.ContainerId == id && ev.ContainerEventType == runtimeapi.ContainerEventType_CONTAINER_STARTED_EVENT {
				sbID, sb = id, cfg
				return nil
			}
			return fmt.Errorf("unexpected event %v", ev)
		case <-time.After(200 * time.Millisecond):
			return errors.New("no sandbox event yet")
		}
	})

	id := e.run(sbID, sb, containerConfig("brief", nil, "sh", "-c", "exit 2"))
	want := []runtimeapi.ContainerEventType{
		runtimeapi.ContainerEventType_CONTAINER_CREATED_EVENT,
		runtimeapi.ContainerEventType_CONTAINER_STARTED_EVENT,
		runtimeapi.ContainerEventType_CONTAINER_STOPPED_EVENT,
	}
	for _, w := range want {
		select {
		case ev := <-events:
			if ev.ContainerId != id || ev.ContainerEventType != w {
				t.Fatalf("event = %s for %s, want %s for %s", ev.ContainerEventType, ev.ContainerId, w, id)
			}
			if ev.PodSandboxStatus.GetId() != sbID {
				t.Errorf("event carries sandbox %q, want %q", ev.PodSandboxStatus.GetId(), sbID)
			}
			if w == runtimeapi.ContainerEventType_CONTAINER_STOPPED_EVENT {
				if len(ev.ContainersStatuses) != 1 || ev.ContainersStatuses[0].ExitCode != 2 ||
					ev.ContainersStatuses[0].State != runtimeapi.ContainerState_CONTAINER_EXITED {
					t.Errorf("STOPPED event statuses = %v, want the exited container", ev.ContainersStatuses)
				}
			}
		case <-time.After(10 * time.Second):
			t.Fatalf("no %s event", w)
		}
	}
	if err := e.c.RemoveContainer(ctx(t), id); err != nil {
		t.Fatal(err)
	}
	select {
	case ev := <-events:
		if ev.ContainerEventType != runtimeapi.ContainerEventType_CONTAINER_DELETED_EVENT || len(ev.ContainersStatuses) != 0 {
			t.Errorf("after remove: %v", ev)
		}
	case <-time.After(10 * time.Second):
		t.Fatal("no DELETED event")
	}
}

func TestRestartAdoption(t *testing.T) {
	e := newEnv(t)
	flags := t.TempDir()
	sbID, sb := e.runSandbox("adopt", nil)
	waitFor := func(name string, code int) string {
		return fmt.Sprintf("while [ ! -e %s ]; do sleep 0.05; done; echo bye; exit %d", filepath.Join(flags, name), code)
	}
	whileDown := e.run(sbID, sb, containerConfig("while-down", nil, "sh", "-c", waitFor("down", 4)))
	afterUp := e.run(sbID, sb, containerConfig("after-up", nil, "sh", "-c", waitFor("up", 7)))
	created := e.create(sbID, sb, containerConfig("created", nil, "true"))

	e.rt.Stop()
	_ = e.c.Close()
	if err := os.WriteFile(filepath.Join(flags, "down"), nil, 0o644); err != nil {
		t.Fatal(err)
	}
	// Let the first container exit while no runtime is serving.
	testutil.Eventually(t, 10*time.Second, func() error {
		if _, err := os.Stat(filepath.Join(sb.LogDirectory, "while-down", "0.log")); err != nil {
			return err
		}
		b, _ := os.ReadFile(filepath.Join(sb.LogDirectory, "while-down", "0.log"))
		if len(b) == 0 {
			return errors.New("no output yet")
		}
		return nil
	})

	e.start()
	if st := e.waitExited(whileDown); st.ExitCode != 4 || st.Reason != "Error" {
		t.Errorf("container that exited while down: %d %q, want 4 Error", st.ExitCode, st.Reason)
	}
	if st := e.status(afterUp); st.State != runtimeapi.ContainerState_CONTAINER_RUNNING {
		t.Fatalf("adopted container is %s, want RUNNING", st.State)
	}
	if st := e.status(created); st.State != runtimeapi.ContainerState_CONTAINER_CREATED {
		t.Errorf("created container is %s after restart", st.State)
	}
	if err := os.WriteFile(filepath.Join(flags, "up"), nil, 0o644); err != nil {
		t.Fatal(err)
	}
	if st := e.waitExited(afterUp); st.ExitCode != 7 || st.Reason != "Error" || st.FinishedAt == 0 {
		t.Errorf("adopted container exit: %d %q at %d, want 7 Error", st.ExitCode, st.Reason, st.FinishedAt)
	}
	// The adopted runtime can still start new containers in old sandboxes.
	if err := e.c.StartContainer(ctx(t), created); err != nil {
		t.Errorf("StartContainer after restart: %v", err)
	}
}

func TestDestroyLeavesNoProcess(t *testing.T) {
	e := newEnv(t)
	sbID, sb := e.runSandbox("destroy", nil)
	var pids []int
	for i, script := range []string{"sleep 300", "sleep 300 & sleep 300 & wait"} {
		id := e.run(sbID, sb, containerConfig(fmt.Sprintf("c%d", i), nil, "sh", "-c", script))
		pid, shim := e.pids(id)
		if pid == 0 || shim == 0 {
			t.Fatalf("no pids for %s", id)
		}
		pids = append(pids, pid, shim)
	}
	testutil.Eventually(t, 5*time.Second, func() error {
		if n := len(groupMembers(pids[2])); n < 3 {
			return fmt.Errorf("container group has %d processes, want 3", n)
		}
		return nil
	})
	e.rt.Destroy()
	for _, pid := range pids {
		if m := groupMembers(pid); len(m) != 0 {
			t.Errorf("processes %v of group %d survived Destroy", m, pid)
		}
	}
	if _, err := os.Stat(filepath.Join(e.root, "containers")); !os.IsNotExist(err) {
		t.Errorf("state not removed: %v", err)
	}
}

func TestImages(t *testing.T) {
	e := newEnv(t)
	spec := &runtimeapi.ImageSpec{Image: "docker.io/library/busybox:1.36"}
	st, err := e.c.ImageStatus(ctx(t), spec, false)
	if err != nil || st.Image != nil {
		t.Fatalf("ImageStatus of an unknown image = %v, %v; want an empty response", st, err)
	}
	ref, err := e.c.PullImage(ctx(t), spec, nil, nil)
	if err != nil || len(ref) != len("sha256:")+64 {
		t.Fatalf("PullImage = %q, %v", ref, err)
	}
	for _, byRef := range []string{spec.Image, ref} {
		st, err := e.c.ImageStatus(ctx(t), &runtimeapi.ImageSpec{Image: byRef}, false)
		if err != nil || st.Image.GetId() != ref || st.Image.RepoTags[0] != spec.Image || st.Image.Size == 0 {
			t.Errorf("ImageStatus(%s) = %v, %v", byRef, st, err)
		}
	}
	if _, err := e.c.PullImage(ctx(t), &runtimeapi.ImageSpec{Image: "alpine"}, nil, nil); err != nil {
		t.Fatal(err)
	}
	if list, err := e.c.ListImages(ctx(t), nil); err != nil || len(list) != 2 {
		t.Errorf("ListImages = %v, %v", list, err)
	}
	if list, err := e.c.ListImages(ctx(t), &runtimeapi.ImageFilter{Image: &runtimeapi.ImageSpec{Image: "alpine"}}); err != nil || len(list) != 1 {
		t.Errorf("ListImages(alpine) = %v, %v", list, err)
	}
	// Records survive a restart.
	e.rt.Stop()
	e.start()
	if err := e.c.RemoveImage(ctx(t), spec); err != nil {
		t.Fatal(err)
	}
	if err := e.c.RemoveImage(ctx(t), spec); err != nil {
		t.Errorf("RemoveImage of an absent image: %v", err)
	}
	if list, _ := e.c.ListImages(ctx(t), nil); len(list) != 1 || list[0].RepoTags[0] != "docker.io/library/alpine:latest" {
		t.Errorf("after remove: %v", list)
	}
}

func TestStartRefusesLiveSocket(t *testing.T) {
	e := newEnv(t)
	_, err := procruntime.Start(procruntime.Options{RootDir: t.TempDir()}, e.sock)
	if err == nil {
		t.Fatal("Start on a socket another runtime serves succeeded")
	}
	if _, err := procruntime.New(procruntime.Options{}); err == nil {
		t.Error("New without RootDir succeeded")
	}
	if _, err := procruntime.New(procruntime.Options{RootDir: t.TempDir(), HostIP: "nope"}); err == nil {
		t.Error("New with a bad HostIP succeeded")
	}
	// The original runtime still serves.
	if _, err := e.c.Version(ctx(t), "v1"); err != nil {
		t.Errorf("Version after refused Start: %v", err)
	}
	var _ cri.Runtime = e.c
}

func TestShimKilledIsUnknownExit(t *testing.T) {
	e := newEnv(t)
	sbID, sb := e.runSandbox("lost", nil)
	id := e.run(sbID, sb, containerConfig("orphan", nil, "sleep", "300"))
	pid, shim := e.pids(id)
	if err := syscall.Kill(shim, syscall.SIGKILL); err != nil {
		t.Fatal(err)
	}
	st := e.waitExited(id)
	if st.ExitCode != 255 || st.Reason != "Unknown" || st.Message == "" {
		t.Errorf("after the shim died: %d %q %q, want 255 Unknown with a message", st.ExitCode, st.Reason, st.Message)
	}
	testutil.Eventually(t, 5*time.Second, func() error {
		if m := groupMembers(pid); len(m) != 0 {
			return fmt.Errorf("container processes %v outlived their shim", m)
		}
		return nil
	})
}

// The CRI socket lets its clients run anything as the runtime's user
// (root): it is 0600 whatever the umask (under umask 0000 a plain listen
// made it srwxrwxrwx), and 0660 owned by SocketGroup when one is given.
func TestSocketModeIgnoresTheUmask(t *testing.T) {
	testutil.Umask(t, 0)
	for _, tc := range []struct {
		group string
		mode  os.FileMode
		gid   int
	}{
		{"", 0o600, os.Getgid()},
		{strconv.Itoa(os.Getgid()), 0o660, os.Getgid()},
	} {
		dir := t.TempDir()
		sock := filepath.Join(dir, "run", "cri.sock")
		rt, err := procruntime.Start(procruntime.Options{RootDir: filepath.Join(dir, "state"), SocketGroup: tc.group}, "unix://"+sock)
		if err != nil {
			t.Fatalf("Start(group %q): %v", tc.group, err)
		}
		fi, err := os.Stat(sock)
		if err != nil {
			t.Fatal(err)
		}
		if fi.Mode()&os.ModeSocket == 0 || fi.Mode().Perm() != tc.mode {
			t.Errorf("group %q: socket mode %v, want %v", tc.group, fi.Mode(), tc.mode)
		}
		if gid := int(fi.Sys().(*syscall.Stat_t).Gid); gid != tc.gid {
			t.Errorf("group %q: socket gid %d, want %d", tc.group, gid, tc.gid)
		}
		if entries, _ := os.ReadDir(filepath.Dir(sock)); len(entries) != 1 {
			t.Errorf("socket directory holds %v, want the socket alone", entries)
		}
		c, err := cri.Dial(ctx(t), "unix://"+sock)
		if err != nil {
			t.Fatal(err)
		}
		if _, err := c.Version(ctx(t), "v1"); err != nil {
			t.Errorf("Version: %v", err)
		}
		c.Close()
		rt.Destroy()
		if _, err := os.Stat(sock); !os.IsNotExist(err) {
			t.Errorf("socket left after Stop: %v", err)
		}
	}
	if _, err := procruntime.Start(procruntime.Options{RootDir: t.TempDir(), SocketGroup: "no-such-group-xyz"}, "unix://"+filepath.Join(t.TempDir(), "s.sock")); err == nil || !strings.Contains(err.Error(), "no-such-group-xyz") {
		t.Errorf("Start with an unknown socket group: %v, want an error naming it", err)
	}
}
