package commands

import (
	"context"
	"fmt"
	"sync"
	"testing"
	"time"

	"github.com/nats-io/nats-server/v2/server"
	"github.com/nats-io/nats.go"
	v1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/types"

	"github.com/actorlet/actorlet/messages/wire"
)

// runNATS starts an in-process nats-server on a random port and returns a
// connection to it; both are closed when the test ends.
func runNATS(t testing.TB) *nats.Conn {
	t.Helper()
	srv, err := server.NewServer(&server.Options{Host: "127.0.0.1", Port: -1, NoLog: true, NoSigs: true})
	if err != nil {
		t.Fatalf("new nats server: %v", err)
	}
	go srv.Start()
	if !srv.ReadyForConnections(5 * time.Second) {
		t.Fatal("nats server not ready")
	}
	t.Cleanup(func() { srv.Shutdown(); srv.WaitForShutdown() })
	nc, err := nats.Connect(srv.ClientURL())
	if err != nil {
		t.Fatalf("connect: %v", err)
	}
	t.Cleanup(nc.Close)
	return nc
}

func testPod(ns, name string, uid types.UID, containers ...string) *v1.Pod {
	p := &v1.Pod{ObjectMeta: metav1.ObjectMeta{Namespace: ns, Name: name, UID: uid}}
	p.Status.Phase = v1.PodRunning
	for i, c := range containers {
		p.Spec.Containers = append(p.Spec.Containers, v1.Container{Name: c, Image: "busybox"})
		p.Status.ContainerStatuses = append(p.Status.ContainerStatuses, v1.ContainerStatus{
			Name:        c,
			ContainerID: fmt.Sprintf("proc://%s-%s-%d", name, c, i),
			State:       v1.ContainerState{Running: &v1.ContainerStateRunning{}},
			Ready:       true,
		})
	}
	return p
}

// fakeNode is a Node whose answers the test sets.
type fakeNode struct {
	mu       sync.Mutex
	pods     []*v1.Pod
	logs     map[string]string // "ns/name/container[/previous]" → path
	listErr  error
	exec     func(cmd []string, timeout time.Duration) ([]byte, []byte, int, error)
	restarts []string
	evicts   []string
}

func (f *fakeNode) setPods(pods ...*v1.Pod) {
	f.mu.Lock()
	defer f.mu.Unlock()
	f.pods = pods
}

func (f *fakeNode) ListPods(ctx context.Context) ([]*v1.Pod, error) {
	f.mu.Lock()
	defer f.mu.Unlock()
	if f.listErr != nil {
		return nil, f.listErr
	}
	out := make([]*v1.Pod, len(f.pods))
	for i, p := range f.pods {
		out[i] = p.DeepCopy()
	}
	return out, nil
}

func (f *fakeNode) find(ns, name string) (*v1.Pod, error) {
	return findPod(context.Background(), f.ListPods, ns, name)
}

func (f *fakeNode) DescribePod(ctx context.Context, ns, name string) (*wire.Description, error) {
	p, err := f.find(ns, name)
	if err != nil {
		return nil, err
	}
	return &wire.Description{Pod: p, BackOffs: map[string]time.Time{"app": time.Unix(1700000000, 0).UTC()}}, nil
}

func (f *fakeNode) LogPath(ctx context.Context, ns, name, container string, previous bool) (string, error) {
	if _, err := f.find(ns, name); err != nil {
		return "", err
	}
	key := ns + "/" + name + "/" + container
	if previous {
		key += "/previous"
	}
	f.mu.Lock()
	defer f.mu.Unlock()
	if p, ok := f.logs[key]; ok {
		return p, nil
	}
	return "", wire.NotFound("container %q", container)
}

func (f *fakeNode) Exec(ctx context.Context, ns, name, container string, cmd []string, timeout time.Duration) ([]byte, []byte, int, error) {
	if _, err := f.find(ns, name); err != nil {
		return nil, nil, 0, err
	}
	return f.exec(cmd, timeout)
}

func (f *fakeNode) Restart(ctx context.Context, ns, name, container string) error {
	if _, err := f.find(ns, name); err != nil {
		return err
	}
	f.mu.Lock()
	defer f.mu.Unlock()
	f.restarts = append(f.restarts, ns+"/"+name+"/"+container)
	return nil
}

func (f *fakeNode) Evict(ctx context.Context, ns, name string, grace *int64, reason string) error {
	if _, err := f.find(ns, name); err != nil {
		return err
	}
	f.mu.Lock()
	defer f.mu.Unlock()
	g := "nil"
	if grace != nil {
		g = fmt.Sprint(*grace)
	}
	f.evicts = append(f.evicts, fmt.Sprintf("%s/%s grace=%s reason=%s", ns, name, g, reason))
	return nil
}

// startService runs a command service for node "n1" backed by fake.
func startService(t testing.TB, nc *nats.Conn, fake Node, opts ServiceOptions) *Service {
	t.Helper()
	if opts.NodeName == "" {
		opts.NodeName = "n1"
	}
	svc, err := StartService(nc, fake, opts)
	if err != nil {
		t.Fatalf("start service: %v", err)
	}
	t.Cleanup(func() { _ = svc.Stop() })
	return svc
}
