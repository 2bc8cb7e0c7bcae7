package main

import (
	"context"
	"encoding/json"
	"flag"
	"fmt"
	"io"
	"os"
	"path/filepath"
	"strconv"
	"time"

	"github.com/asynkron/protoactor-go/actor"
	v1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/klog/v2"

	"github.com/actorlet/actorlet/cri"
	"github.com/actorlet/actorlet/messages/wire"
	"github.com/actorlet/actorlet/node/agent"
	"github.com/actorlet/actorlet/test/memcri"
)

// benchNamespace is the namespace of every pod the harness creates; with the
// run label it is how leftovers are found and removed.
const (
	benchNamespace = "actorlet-bench"
	runLabel       = "actorlet.io/bench-run"
)

// quietKlog sends the agents' logs to a file instead of stderr, so tables
// stay readable. The file is kept after the run. verbosity is klog's -v
// (6 logs every CRI call with its duration: a trace of the run).
func quietKlog(run string, verbosity int) (string, error) {
	fs := flag.NewFlagSet("klog", flag.ContinueOnError)
	klog.InitFlags(fs)
	for k, v := range map[string]string{"logtostderr": "false", "alsologtostderr": "false", "stderrthreshold": "FATAL", "v": strconv.Itoa(verbosity)} {
		if err := fs.Set(k, v); err != nil {
			return "", fmt.Errorf("set klog flag %s: %w", k, err)
		}
	}
	path := filepath.Join(os.TempDir(), "actorlet-bench-"+run+".log")
	f, err := os.Create(path)
	if err != nil {
		return "", fmt.Errorf("create the agents' log: %w", err)
	}
	// klog writes a line to its own severity's output and to each lower
	// one's: the INFO output alone holds every line once.
	klog.SetOutputBySeverity("INFO", f)
	for _, sev := range []string{"WARNING", "ERROR", "FATAL"} {
		klog.SetOutputBySeverity(sev, io.Discard)
	}
	return path, nil
}

// agentOpts is one in-process agent.
type agentOpts struct {
	name      string
	dir       string
	natsURL   string
	creds     string // node credentials, for an authenticated bus
	runtime   cri.Runtime
	maxPods   int
	relist    time.Duration
	heartbeat time.Duration
	labels    map[string]string
	callLimit string // --runtime-call-limit; "" for the default
	// maxParallel is --max-parallel-runtime-calls; 0 for the default
	maxParallel int
	// middleware, optional, observes the agent's actors (the detect
	// section records when the sync loop receives ContainerDied).
	middleware []actor.ReceiverMiddleware
}

func startAgent(ctx context.Context, o agentOpts) (*agent.Agent, error) {
	cfg := agent.DefaultConfig()
	cfg.NodeName = o.name
	cfg.RootDir = filepath.Join(o.dir, o.name)
	cfg.NATS = agent.NATSConfig{URL: o.natsURL, CredsFile: o.creds}
	cfg.Runtime = o.runtime
	cfg.HealthzPort = 0
	cfg.NodeLabels = o.labels
	cfg.NodeIP = "127.0.0.1"
	if o.maxPods > 0 {
		cfg.MaxPods = o.maxPods
	}
	if o.relist > 0 {
		cfg.RelistPeriod = o.relist
	}
	if o.heartbeat > 0 {
		cfg.NodeStatusUpdateFrequency = o.heartbeat
	}
	if o.callLimit != "" {
		cfg.RuntimeCallLimit = o.callLimit
	}
	if o.maxParallel > 0 {
		cfg.MaxParallelRuntimeCalls = o.maxParallel
	}
	cfg.ReceiverMiddleware = o.middleware
	if _, inMemory := o.runtime.(*memcri.Runtime); inMemory {
		// No container runs, so there is nothing to put in a pod cgroup;
		// and the in-process agents share this host's cgroup hierarchy:
		// each agent's housekeeping would take every other agent's pod
		// cgroups for orphans and remove them (71 % of a fleet run's CPU
		// went to that), and would touch the pod cgroups of whatever
		// else runs pods on this machine.
		cfg.CgroupsPerQOS = false
	}
	a, err := agent.Start(ctx, cfg)
	if err != nil {
		return nil, fmt.Errorf("start agent %s: %w", o.name, err)
	}
	return a, nil
}

// podSpec is what each benchmark pod runs.
type podSpec struct {
	image   string
	command []string
	run     string // run label value
}

func (s podSpec) pod(name string) *v1.Pod {
	grace := int64(1)
	return &v1.Pod{
		TypeMeta:   metav1.TypeMeta{APIVersion: "v1", Kind: "Pod"},
		ObjectMeta: metav1.ObjectMeta{Name: name, Namespace: benchNamespace, Labels: map[string]string{runLabel: s.run}},
		Spec: v1.PodSpec{
			TerminationGracePeriodSeconds: &grace,
			Containers: []v1.Container{{
				Name: "c", Image: s.image, Command: s.command, ImagePullPolicy: v1.PullIfNotPresent,
			}},
		},
	}
}

// nodePods is n pods for one node, as desired-bucket values by key.
func (s podSpec) nodePods(node, prefix string, n int) (map[string][]byte, error) {
	out := make(map[string][]byte, n)
	for i := range n {
		name := fmt.Sprintf("%s-%d", prefix, i)
		data, err := json.Marshal(s.pod(name))
		if err != nil {
			return nil, fmt.Errorf("encode pod %s: %w", name, err)
		}
		out[wire.DesiredNodeKey(node, benchNamespace, name)] = data
	}
	return out, nil
}

// fleetPods is n fleet-wide pods selecting nodes by selector.
func (s podSpec) fleetPods(prefix string, n int, selector map[string]string) (map[string][]byte, error) {
	out := make(map[string][]byte, n)
	for i := range n {
		name := fmt.Sprintf("%s-%d", prefix, i)
		p := s.pod(name)
		p.Spec.NodeSelector = selector
		data, err := json.Marshal(p)
		if err != nil {
			return nil, fmt.Errorf("encode pod %s: %w", name, err)
		}
		out[wire.DesiredFleetKey(benchNamespace, name)] = data
	}
	return out, nil
}
