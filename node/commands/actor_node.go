package commands

import (
	"context"
	"errors"
	"fmt"
	"path/filepath"
	"strconv"
	"strings"
	"time"

	"github.com/asynkron/protoactor-go/actor"
	v1 "k8s.io/api/core/v1"
	"k8s.io/apimachinery/pkg/types"
	runtimeapi "k8s.io/cri-api/pkg/apis/runtime/v1"

	"github.com/actorlet/actorlet/actors/actorutil"
	"github.com/actorlet/actorlet/cri"
	"github.com/actorlet/actorlet/messages"
	"github.com/actorlet/actorlet/messages/wire"
)

// ContainerRuntime is the part of the CRI runtime ActorNode uses.
type ContainerRuntime interface {
	ContainerStatus(ctx context.Context, containerID string, verbose bool) (*runtimeapi.ContainerStatusResponse, error)
	ExecSync(ctx context.Context, containerID string, cmd []string, timeout time.Duration) (stdout, stderr []byte, err error)
}

// DefaultActorTimeout bounds an ask of an actor when ctx has no deadline.
const DefaultActorTimeout = actorutil.DefaultAskTimeout

// ActorNode implements Node by asking the agent's actors: the status actor
// (ListPodStatuses), the supervisor (DescribePodWorker, RestartPod,
// TerminatePod) and the prober (ListProbes), and the CRI runtime for exec
// and log paths. It is safe for concurrent use; it never runs inside an
// actor.
type ActorNode struct {
	Root       *actor.RootContext
	Supervisor *actor.PID
	Status     *actor.PID
	Prober     *actor.PID
	Runtime    ContainerRuntime
	// Streaming runs exec -it, attach and port-forward; optional (nil:
	// those verbs answer 501).
	Streaming StreamingRuntime
	// BackOffs returns a pod's container restart back-offs (container →
	// until); optional.
	BackOffs func(uid types.UID) map[string]time.Time
	// Events returns recent events about a pod; optional.
	Events func(namespace, name string) []v1.Event
	// Placement changes the node's labels and taints at run time;
	// optional (without it the verb answers 501).
	Placement func(labels map[string]string, taints []v1.Taint)
}

// SetPlacement replaces the node's labels and taints.
func (n *ActorNode) SetPlacement(_ context.Context, labels map[string]string, taints []v1.Taint) error {
	if n.Placement == nil {
		return &wire.Error{Code: 501, Description: "this node cannot change its labels or taints"}
	}
	n.Placement(labels, taints)
	return nil
}

var _ Node = &ActorNode{}

// ListPods asks the status actor for every pod with its status.
func (n *ActorNode) ListPods(ctx context.Context) ([]*v1.Pod, error) {
	list, err := actorutil.Ask[*messages.PodStatusList](ctx, n.Root, n.Status, &messages.ListPodStatuses{})
	if err != nil {
		return nil, err
	}
	pods := make([]*v1.Pod, 0, len(list.Pods))
	for _, p := range list.Pods {
		if p.Pod != nil {
			pods = append(pods, p.Pod)
		}
	}
	return pods, nil
}

// pod finds one pod by namespace and name.
func (n *ActorNode) pod(ctx context.Context, namespace, name string) (*v1.Pod, error) {
	return findPod(ctx, n.ListPods, namespace, name)
}

// findPod finds one pod of what list returns by namespace and name, or
// returns the NotFound error naming it.
func findPod(ctx context.Context, list func(context.Context) ([]*v1.Pod, error), namespace, name string) (*v1.Pod, error) {
	pods, err := list(ctx)
	if err != nil {
		return nil, err
	}
	for _, p := range pods {
		if p.Namespace == namespace && p.Name == name {
			return p, nil
		}
	}
	return nil, wire.NotFound("pod %s/%s", namespace, name)
}

// DescribePod gathers the pod's status, worker state, probes and back-offs.
func (n *ActorNode) DescribePod(ctx context.Context, namespace, name string) (*wire.Description, error) {
	p, err := n.pod(ctx, namespace, name)
	if err != nil {
		return nil, err
	}
	d := &wire.Description{Pod: p}
	w, err := actorutil.Ask[*messages.PodWorkerDescription](ctx, n.Root, n.Supervisor, &messages.DescribePodWorker{UID: p.UID})
	if err != nil {
		return nil, err
	}
	d.Worker = wirePodWorker(w)
	if n.Prober != nil {
		ps, err := actorutil.Ask[*messages.ProbeStates](ctx, n.Root, n.Prober, &messages.ListProbes{UID: p.UID})
		if err != nil {
			return nil, err
		}
		for _, s := range ps.Probes {
			d.Probes = append(d.Probes, wireProbeWorker(s))
		}
	}
	if n.BackOffs != nil {
		d.BackOffs = n.BackOffs(p.UID)
	}
	if n.Events != nil {
		d.Events = n.Events(namespace, name)
	}
	return d, nil
}

// wirePodWorker is the pod actor's description as the protocol has it.
func wirePodWorker(w *messages.PodWorkerDescription) wire.PodWorker {
	return wire.PodWorker{
		Found: w.Found, UID: w.UID, FullName: w.FullName, WorkType: w.WorkType.String(),
		Working: w.Working, PendingUpdate: w.PendingUpdate, RestartRequested: w.RestartRequested,
		GracePeriod: w.GracePeriod, LastSyncTime: w.LastSyncTime, LastSyncError: w.LastSyncError,
		NextSyncTime: w.NextSyncTime, ActorRestarts: w.ActorRestarts,
	}
}

// wireProbeWorker is a probe worker's state as the protocol has it.
func wireProbeWorker(s messages.ProbeState) wire.ProbeWorker {
	return wire.ProbeWorker{
		ContainerName: s.ContainerName, ContainerID: s.ContainerID, Kind: string(s.Kind),
		Result: s.Result.String(), Successes: s.Successes, Failures: s.Failures,
		LastProbe: s.LastProbe, Message: s.Message,
	}
}

// container resolves a container name (empty: the pod's only container)
// and its status.
func container(p *v1.Pod, name string) (*v1.ContainerStatus, error) {
	if name == "" {
		if len(p.Spec.Containers) != 1 {
			names := make([]string, 0, len(p.Spec.Containers))
			for _, c := range p.Spec.Containers {
				names = append(names, c.Name)
			}
			return nil, wire.BadRequest("container", fmt.Sprintf("required: pod %s/%s has containers %s", p.Namespace, p.Name, strings.Join(names, ", ")))
		}
		name = p.Spec.Containers[0].Name
	}
	if cs := findContainerStatus(p, name); cs != nil {
		return cs, nil
	}
	if inSpec(p, name) {
		return nil, wire.NotFound("container %q of pod %s/%s has not been created yet", name, p.Namespace, p.Name)
	}
	return nil, wire.NotFound("container %q in pod %s/%s", name, p.Namespace, p.Name)
}

func inSpec(p *v1.Pod, name string) bool {
	for _, c := range allContainers(p) {
		if c.Name == name {
			return true
		}
	}
	return false
}

// runtimeID strips the "<runtime>://" prefix of a status container ID.
func runtimeID(id string) string {
	if _, after, ok := strings.Cut(id, "://"); ok {
		return after
	}
	return id
}

// LogPath asks the runtime for the current instance's log path; the
// previous instance's file sits beside it as <restartCount-1>.log.
func (n *ActorNode) LogPath(ctx context.Context, namespace, name, containerName string, previous bool) (string, error) {
	p, err := n.pod(ctx, namespace, name)
	if err != nil {
		return "", err
	}
	cs, err := container(p, containerName)
	if err != nil {
		return "", err
	}
	if cs.ContainerID == "" {
		return "", wire.NotFound("container %q of pod %s/%s has not been created yet", cs.Name, namespace, name)
	}
	resp, err := n.Runtime.ContainerStatus(ctx, runtimeID(cs.ContainerID), false)
	if err != nil {
		if cri.IsNotFound(err) {
			return "", wire.NotFound("container %q (%s)", cs.Name, cs.ContainerID)
		}
		return "", fmt.Errorf("container status %q: %w", cs.ContainerID, err)
	}
	path := resp.GetStatus().GetLogPath()
	if path == "" {
		return "", fmt.Errorf("container %q (%s): runtime reports no log path", cs.Name, cs.ContainerID)
	}
	if !previous {
		return path, nil
	}
	attempt := int64(cs.RestartCount)
	if n, err := strconv.ParseInt(strings.TrimSuffix(filepath.Base(path), ".log"), 10, 64); err == nil {
		attempt = n
	}
	if attempt < 1 {
		return "", wire.NotFound("previous terminated container %q in pod %s/%s", cs.Name, namespace, name)
	}
	return filepath.Join(filepath.Dir(path), fmt.Sprintf("%d.log", attempt-1)), nil
}

// Exec runs cmd through CRI ExecSync in the container's current instance.
func (n *ActorNode) Exec(ctx context.Context, namespace, name, containerName string, cmd []string, timeout time.Duration) ([]byte, []byte, int, error) {
	p, err := n.pod(ctx, namespace, name)
	if err != nil {
		return nil, nil, 0, err
	}
	cs, err := container(p, containerName)
	if err != nil {
		return nil, nil, 0, err
	}
	if cs.State.Running == nil || cs.ContainerID == "" {
		return nil, nil, 0, wire.BadRequest("container", fmt.Sprintf("%q is not running", cs.Name))
	}
	stdout, stderr, err := n.Runtime.ExecSync(ctx, runtimeID(cs.ContainerID), cmd, timeout)
	var exit *cri.ExitError
	switch {
	case err == nil:
		return stdout, stderr, 0, nil
	case errors.As(err, &exit):
		return stdout, stderr, exit.ExitCode(), nil
	case cri.IsNotFound(err):
		return nil, nil, 0, wire.NotFound("container %q (%s)", cs.Name, cs.ContainerID)
	case cri.IsDeadlineExceeded(err):
		return stdout, stderr, 0, fmt.Errorf("exec %q in %q: %w", cmd[0], cs.Name, context.DeadlineExceeded)
	}
	return nil, nil, 0, fmt.Errorf("exec %q in %q: %w", cmd[0], cs.Name, err)
}

// Restart asks the supervisor to restart the pod's (or one) container.
func (n *ActorNode) Restart(ctx context.Context, namespace, name, containerName string) error {
	p, err := n.pod(ctx, namespace, name)
	if err != nil {
		return err
	}
	if containerName != "" && !inSpec(p, containerName) {
		return wire.NotFound("container %q in pod %s/%s", containerName, namespace, name)
	}
	n.Root.Send(n.Supervisor, &messages.RestartPod{UID: p.UID, Container: containerName})
	return nil
}

// Evict asks the supervisor to evict the pod.
func (n *ActorNode) Evict(ctx context.Context, namespace, name string, gracePeriodSeconds *int64, reason string) error {
	p, err := n.pod(ctx, namespace, name)
	if err != nil {
		return err
	}
	n.Root.Send(n.Supervisor, &messages.TerminatePod{UID: p.UID, Options: messages.KillOptions{
		GracePeriodSecondsOverride: gracePeriodSeconds,
		Evict:                      true,
		Reason:                     reason,
		Message:                    fmt.Sprintf("The pod was evicted by an operator: %s", reason),
	}})
	return nil
}
