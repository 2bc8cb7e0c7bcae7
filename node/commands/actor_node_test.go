package commands

import (
	"context"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/asynkron/protoactor-go/actor"
	"google.golang.org/grpc/codes"
	"google.golang.org/grpc/status"
	v1 "k8s.io/api/core/v1"
	"k8s.io/apimachinery/pkg/types"
	runtimeapi "k8s.io/cri-api/pkg/apis/runtime/v1"

	"github.com/actorlet/actorlet/cri"
	"github.com/actorlet/actorlet/messages"
	"github.com/actorlet/actorlet/messages/wire"
)

// fakeRuntime answers ContainerStatus with a log path under LogRoot and
// ExecSync with an exit code taken from the command.
type fakeRuntime struct {
	logRoot string
}

func (r *fakeRuntime) ContainerStatus(ctx context.Context, id string, verbose bool) (*runtimeapi.ContainerStatusResponse, error) {
	if id == "gone" {
		return nil, status.Error(codes.NotFound, "no such container")
	}
	return &runtimeapi.ContainerStatusResponse{Status: &runtimeapi.ContainerStatus{
		Id:      id,
		LogPath: filepath.Join(r.logRoot, "default_web_u1", "app", "2.log"),
	}}, nil
}

func (r *fakeRuntime) ExecSync(ctx context.Context, id string, cmd []string, timeout time.Duration) ([]byte, []byte, error) {
	if cmd[0] == "false" {
		return []byte("o"), []byte("e"), &cri.ExitError{Code: 7, Stdout: []byte("o"), Stderr: []byte("e")}
	}
	return []byte(id + ":" + strings.Join(cmd, " ")), nil, nil
}

// testActors spawns tiny status, supervisor and prober actors; what the
// supervisor is told arrives on the returned channel.
func testActors(t *testing.T, pods ...*v1.Pod) (*ActorNode, chan any) {
	t.Helper()
	system := actor.NewActorSystem()
	t.Cleanup(system.Shutdown)
	root := system.Root
	told := make(chan any, 10)
	status := root.Spawn(actor.PropsFromFunc(func(ctx actor.Context) {
		if _, ok := ctx.Message().(*messages.ListPodStatuses); ok {
			l := &messages.PodStatusList{}
			for _, p := range pods {
				l.Pods = append(l.Pods, messages.PodStatusChanged{Pod: p.DeepCopy()})
			}
			ctx.Respond(l)
		}
	}))
	supervisor := root.Spawn(actor.PropsFromFunc(func(ctx actor.Context) {
		switch m := ctx.Message().(type) {
		case *messages.DescribePodWorker:
			ctx.Respond(&messages.PodWorkerDescription{Found: true, UID: m.UID, WorkType: messages.SyncWork, LastSyncError: "none"})
		case *messages.RestartPod, *messages.TerminatePod:
			told <- m
		}
	}))
	prober := root.Spawn(actor.PropsFromFunc(func(ctx actor.Context) {
		if m, ok := ctx.Message().(*messages.ListProbes); ok {
			ctx.Respond(&messages.ProbeStates{Probes: []messages.ProbeState{{ContainerName: "app", Kind: messages.Readiness, Result: messages.ProbeSuccess, ContainerID: string(m.UID)}}})
		}
	}))
	n := &ActorNode{
		Root: root, Status: status, Supervisor: supervisor, Prober: prober,
		Runtime: &fakeRuntime{logRoot: "/var/log/pods"},
		BackOffs: func(uid types.UID) map[string]time.Time {
			return map[string]time.Time{"app": time.Unix(100, 0)}
		},
	}
	return n, told
}

func TestActorNodeQueries(t *testing.T) {
	web := testPod("default", "web", "u1", "app")
	web.Status.ContainerStatuses[0].RestartCount = 2
	multi := testPod("default", "multi", "u2", "a", "b")
	gone := testPod("default", "gone", "u3", "app")
	gone.Status.ContainerStatuses[0].ContainerID = "proc://gone"
	n, _ := testActors(t, web, multi, gone)
	ctx := context.Background()

	pods, err := n.ListPods(ctx)
	if err != nil || len(pods) != 3 {
		t.Fatalf("ListPods = %d, %v", len(pods), err)
	}

	d, err := n.DescribePod(ctx, "default", "web")
	if err != nil {
		t.Fatal(err)
	}
	if !d.Worker.Found || d.Worker.UID != "u1" || len(d.Probes) != 1 || d.Probes[0].ContainerID != "u1" || d.BackOffs["app"].Unix() != 100 {
		t.Fatalf("Describe = %+v", d)
	}
	if _, err := n.DescribePod(ctx, "default", "nope"); !wire.IsNotFound(err) {
		t.Fatalf("Describe unknown = %v, want 404", err)
	}

	logTests := []struct {
		pod, container string
		previous       bool
		want           string
		code           int
	}{
		{"web", "app", false, "/var/log/pods/default_web_u1/app/2.log", 0},
		{"web", "", false, "/var/log/pods/default_web_u1/app/2.log", 0},
		{"web", "app", true, "/var/log/pods/default_web_u1/app/1.log", 0},
		{"web", "nope", false, "", 404},
		{"multi", "", false, "", 400},
		{"gone", "app", false, "", 404},
		{"absent", "app", false, "", 404},
	}
	for _, tt := range logTests {
		got, err := n.LogPath(ctx, "default", tt.pod, tt.container, tt.previous)
		if tt.code != 0 {
			if wire.ErrorCode(err) != tt.code {
				t.Errorf("LogPath(%s,%s,%v) err = %v, want code %d", tt.pod, tt.container, tt.previous, err, tt.code)
			}
			continue
		}
		if err != nil || got != tt.want {
			t.Errorf("LogPath(%s,%s,%v) = %q, %v; want %q", tt.pod, tt.container, tt.previous, got, err, tt.want)
		}
	}

	out, _, code, err := n.Exec(ctx, "default", "web", "app", []string{"echo", "hi"}, time.Second)
	if err != nil || code != 0 || string(out) != "web-app-0:echo hi" {
		t.Fatalf("Exec = %q %d %v", out, code, err)
	}
	out, stderr, code, err := n.Exec(ctx, "default", "web", "", []string{"false"}, time.Second)
	if err != nil || code != 7 || string(out) != "o" || string(stderr) != "e" {
		t.Fatalf("Exec false = %q %q %d %v", out, stderr, code, err)
	}
}

func TestActorNodeCommands(t *testing.T) {
	n, told := testActors(t, testPod("default", "web", "u1", "app"))
	ctx := context.Background()
	if err := n.Restart(ctx, "default", "web", "app"); err != nil {
		t.Fatal(err)
	}
	if m := *(<-told).(*messages.RestartPod); m != (messages.RestartPod{UID: "u1", Container: "app"}) {
		t.Fatalf("supervisor got %#v", m)
	}
	if err := n.Restart(ctx, "default", "web", "nope"); !wire.IsNotFound(err) {
		t.Fatalf("Restart unknown container = %v", err)
	}
	g := int64(3)
	if err := n.Evict(ctx, "default", "web", &g, "NodePressure"); err != nil {
		t.Fatal(err)
	}
	m := *(<-told).(*messages.TerminatePod)
	if m.UID != "u1" || !m.Options.Evict || m.Options.Reason != "NodePressure" || *m.Options.GracePeriodSecondsOverride != 3 {
		t.Fatalf("supervisor got %#v", m)
	}
}

func TestActorNodeTimeout(t *testing.T) {
	system := actor.NewActorSystem()
	t.Cleanup(system.Shutdown)
	silent := system.Root.Spawn(actor.PropsFromFunc(func(actor.Context) {}))
	n := &ActorNode{Root: system.Root, Status: silent}
	ctx, cancel := context.WithTimeout(context.Background(), 100*time.Millisecond)
	defer cancel()
	if _, err := n.ListPods(ctx); wire.ErrorCode(err) != wire.CodeTimeout {
		t.Fatalf("ListPods on a silent actor = %v, want 504", err)
	}
}

// The whole path: a client request through the service to real actors.
func TestActorNodeBehindService(t *testing.T) {
	nc := runNATS(t)
	n, told := testActors(t, testPod("default", "web", "u1", "app"))
	startService(t, nc, n, ServiceOptions{})
	c := &wire.Client{NC: nc, Timeout: 5 * time.Second}
	d, err := c.DescribePod(context.Background(), "n1", "default", "web")
	if err != nil || d.Worker.WorkType != messages.SyncWork.String() || d.Worker.LastSyncError != "none" {
		t.Fatalf("Describe = %+v, %v", d, err)
	}
	if _, err := c.Evict(context.Background(), "n1", "default", "web", nil, ""); err != nil {
		t.Fatal(err)
	}
	if m := *(<-told).(*messages.TerminatePod); m.Options.Reason != "Evicted" || m.Options.GracePeriodSecondsOverride != nil {
		t.Fatalf("supervisor got %#v", m)
	}
}

// TestDescribeMapsActorStateToWords: the node puts the actor's work type
// and probe results on the wire as the words of docs/protocol.md.
func TestDescribeMapsActorStateToWords(t *testing.T) {
	w := wirePodWorker(&messages.PodWorkerDescription{Found: true, WorkType: messages.TerminatedWork})
	p := wireProbeWorker(messages.ProbeState{Kind: messages.Liveness, Result: messages.ProbeFailure})
	if w.WorkType != "terminated" || p.Kind != "liveness" || p.Result != "Failure" {
		t.Errorf("worker %+v, probe %+v: want terminated, liveness, Failure", w, p)
	}
}
