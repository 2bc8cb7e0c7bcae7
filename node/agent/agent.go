package agent

import (
	"context"
	"fmt"
	"maps"
	"net"
	"os"
	"path/filepath"
	"runtime"
	"sync"
	"sync/atomic"
	"time"

	"github.com/asynkron/protoactor-go/actor"
	"github.com/prometheus/client_golang/prometheus"
	v1 "k8s.io/api/core/v1"
	"k8s.io/apimachinery/pkg/api/resource"
	"k8s.io/klog/v2"
	"k8s.io/utils/clock"

	"github.com/actorlet/actorlet/actors/actorutil"
	"github.com/actorlet/actorlet/actors/eviction"
	"github.com/actorlet/actorlet/actors/pleg"
	"github.com/actorlet/actorlet/actors/prober"
	"github.com/actorlet/actorlet/actors/status"
	"github.com/actorlet/actorlet/actors/supervisor"
	"github.com/actorlet/actorlet/bus"
	"github.com/actorlet/actorlet/cri"
	"github.com/actorlet/actorlet/cri/crilogs"
	"github.com/actorlet/actorlet/cri/imagegc"
	"github.com/actorlet/actorlet/cri/kuberuntime"
	"github.com/actorlet/actorlet/cri/procruntime"
	"github.com/actorlet/actorlet/messages"
	"github.com/actorlet/actorlet/node/allocatable"
	"github.com/actorlet/actorlet/node/commands"
	"github.com/actorlet/actorlet/node/events"
	"github.com/actorlet/actorlet/node/publish"
	"github.com/actorlet/actorlet/sources/file"
	"github.com/actorlet/actorlet/sources/mux"
	"github.com/actorlet/actorlet/sources/objects"
	"github.com/actorlet/actorlet/sources/remote"
)

// Agent is one running node: the runtime, the bus, the actor tree and the
// sources, started in that order and stopped in reverse.
type Agent struct {
	cfg      Config
	started  time.Time
	stopOnce sync.Once
	closers  []func() // run in reverse on shutdown

	runtime    cri.Runtime
	runtimeVer string
	manager    *kuberuntime.Manager
	imageGC    *imagegc.Manager // nil: image GC off
	logs       *crilogs.Manager // nil: log rotation off
	conn       *bus.Conn
	recorder   *events.Recorder
	statuses   *publish.StatusPublisher // owns the node's status entries
	system     *actor.ActorSystem
	actors     supervisor.Handles // the sync loop and its fixed children
	remote     *remote.Source
	mux        *mux.Mux
	metrics    *agentMetrics
	// labels are the node's labels as last set at run time (nil: the
	// start-up ones), given again to a restarted sync loop.
	labels atomic.Pointer[messages.NodeLabelsChanged]
	// admission is the runtime's admission check (nil: none).
	admission *runtimeAdmission
	heartbeat *publish.Heartbeat
	// reserved is what --system-reserved, --kube-reserved and
	// --eviction-hard hold back from the node's capacity.
	reserved allocatable.Config
	// ephemeralStorage is the node's ephemeral-storage capacity (its root
	// directory's filesystem); nil when it cannot be read.
	ephemeralStorage *resource.Quantity

	// A graceful node shutdown (shutdown.go): shuttingDown while it runs,
	// shutDown closed once it is over.
	shuttingDown atomic.Bool
	shutDown     chan struct{}
	shutDownOnce sync.Once
}

// Version is the agent's version, set at build time with
// -ldflags "-X github.com/actorlet/actorlet/node/agent.Version=…".
var Version = "0.1.0"

// Run starts the agent and blocks until ctx ends, then stops it, leaving
// the pods running: a restarted agent adopts them. After a graceful node
// shutdown (the system is going down; its pods are terminated) it stops
// and returns too.
func Run(ctx context.Context, cfg Config) error {
	a, err := Start(ctx, cfg)
	if err != nil {
		return err
	}
	select {
	case <-ctx.Done():
	case <-a.ShutDown():
	}
	a.Stop()
	return nil
}

// Start brings an agent up: runtime, bus, actor tree, sources and node
// services. ctx bounds the agent's life (sources stop with it); Stop stops
// everything and leaves the pods running.
func Start(ctx context.Context, cfg Config) (*Agent, error) {
	if err := cfg.complete(); err != nil {
		return nil, err
	}
	a := &Agent{cfg: cfg, started: time.Now(), metrics: newAgentMetrics(), shutDown: make(chan struct{})}
	if err := a.start(ctx); err != nil {
		a.shutdown()
		return nil, err
	}
	klog.InfoS("Agent running", "node", cfg.NodeName, "runtime", a.runtimeVer, "bus", a.conn.ClientURL(),
		"rootDir", cfg.RootDir, "manifests", cfg.PodManifestPath)
	return a, nil
}

// Stop stops the agent; pods keep running. It is safe to call twice.
func (a *Agent) Stop() {
	a.stopOnce.Do(func() {
		if a.shuttingDown.Load() {
			klog.InfoS("Agent stopping after a node shutdown", "node", a.cfg.NodeName)
		} else {
			klog.InfoS("Agent stopping; pods keep running", "node", a.cfg.NodeName)
		}
		a.shutdown()
	})
}

// NodeName is the node this agent runs.
func (a *Agent) NodeName() string { return a.cfg.NodeName }

// BusURL is the NATS URL the agent is connected to (the embedded server's
// when it runs one).
func (a *Agent) BusURL() string { return a.conn.ClientURL() }

// ActorSystem is the agent's actor system, for tests and tools.
func (a *Agent) ActorSystem() *actor.ActorSystem { return a.system }

// Supervisor is the PID of the sync loop.
func (a *Agent) Supervisor() *actor.PID { return a.actors.Supervisor }

// MetricsGatherer is the agent's Prometheus registry.
func (a *Agent) MetricsGatherer() prometheus.Gatherer { return a.metrics.reg }

func (a *Agent) onShutdown(f func()) { a.closers = append(a.closers, f) }

func (a *Agent) shutdown() {
	for i := len(a.closers) - 1; i >= 0; i-- {
		a.closers[i]()
	}
}

func (a *Agent) start(ctx context.Context) error {
	cfg := a.cfg
	reserved, err := cfg.Reservations()
	if err != nil {
		return err
	}
	a.reserved = reserved
	for _, d := range []string{cfg.RootDir, cfg.PodLogsDir, filepath.Join(cfg.RootDir, "pods")} {
		if err := os.MkdirAll(d, 0o755); err != nil {
			return fmt.Errorf("create %s: %w", d, err)
		}
	}
	// Pods' volumes (Secrets among them) live under <root>/pods: the
	// agent's user only, as the kubelet keeps /var/lib/kubelet/pods, and
	// whatever the umask or the mode an older agent left.
	if err := os.Chmod(filepath.Join(cfg.RootDir, "pods"), 0o750); err != nil {
		return fmt.Errorf("pods directory: %w", err)
	}
	if q, err := allocatable.EphemeralStorage(cfg.RootDir); err != nil {
		klog.ErrorS(err, "The node reports no ephemeral-storage capacity: pods requesting it are refused")
	} else {
		a.ephemeralStorage = &q
	}
	if a.cfg.NodeIP == "" {
		a.cfg.NodeIP = procruntime.FirstHostIP()
	}
	if err := a.startRuntime(ctx); err != nil {
		return err
	}
	if err := a.startLogRotation(ctx); err != nil {
		return err
	}
	if err := a.startBus(ctx); err != nil {
		return err
	}
	a.recorder = events.NewRecorder(a.conn.JS, cfg.NodeName)
	a.onShutdown(a.recorder.Stop)
	// ConfigMaps and Secrets this node may read; a change syncs the pods
	// that use it (once the supervisor runs).
	var sup atomic.Pointer[actor.PID]
	store, err := objects.Start(ctx, a.conn, cfg.NodeName, func(r objects.Ref) {
		if pid := sup.Load(); pid != nil {
			a.system.Root.Send(pid, &messages.ObjectChanged{Kind: r.Kind, Namespace: r.Namespace, Name: r.Name})
		}
	})
	if err != nil {
		return fmt.Errorf("start the ConfigMap and Secret store: %w", err)
	}
	a.onShutdown(store.Stop)
	if a.imageGC, err = a.startImageGC(ctx); err != nil {
		return err
	}
	var imageUsed func(string)
	if a.imageGC != nil {
		imageUsed = a.imageGC.MarkUsed
	}
	cgroupManager, err := a.startCgroups()
	if err != nil {
		return err
	}
	var podCgroups kuberuntime.PodCgroups
	if cgroupManager != nil {
		podCgroups = cgroupManager
	}
	a.manager = kuberuntime.NewManager(a.limitRuntime(), kuberuntime.Options{
		PodLogsDir:  cfg.PodLogsDir,
		PodsDir:     filepath.Join(cfg.RootDir, "pods"),
		HostIP:      a.cfg.NodeIP,
		NodeName:    cfg.NodeName,
		Recorder:    a.recorder,
		Allocatable: nodeAllocatable(cfg.MaxPods, a.reserved, a.ephemeralStorage),
		Objects:     store,
		// A debug container runs the operator's command as exec does.
		DenyEphemeralContainers: !cfg.AllowExec,
		ImageUsed:               imageUsed,
		PodCgroups:              podCgroups,
	})
	if err := a.startActors(); err != nil {
		return err
	}
	sup.Store(a.Supervisor())
	if err := a.startSources(ctx); err != nil {
		return err
	}
	return a.startNodeServices(ctx)
}

// limitRuntime bounds the runtime work of the manager by
// --max-parallel-runtime-calls, fixed or adaptive (--runtime-call-limit);
// the limit in force is the actorlet_runtime_call_limit gauge.
func (a *Agent) limitRuntime() cri.Runtime {
	n := a.cfg.MaxParallelRuntimeCalls
	if n <= 0 {
		return a.runtime
	}
	if a.cfg.RuntimeCallLimit != RuntimeCallLimitAdaptive {
		a.metrics.callLimit.Set(float64(n))
		return cri.Limit(a.runtime, n)
	}
	g := &cri.Gradient{Max: n, OnChange: func(l int) { a.metrics.callLimit.Set(float64(l)) }}
	a.metrics.callLimit.Set(float64(g.Limit()))
	return cri.LimitAdaptive(a.runtime, g)
}

// startRuntime connects to the CRI endpoint, or starts the embedded process
// runtime when none is given.
func (a *Agent) startRuntime(ctx context.Context) error {
	if a.cfg.Runtime != nil {
		a.runtime = a.cfg.Runtime
		if v, err := a.runtime.Version(ctx, "v1"); err == nil {
			a.runtimeVer = v.RuntimeName + "://" + v.RuntimeVersion
		}
		return nil
	}
	endpoint := a.cfg.ContainerRuntimeEndpoint
	if endpoint == "" {
		dir := filepath.Join(a.cfg.RootDir, "runtime")
		endpoint = "unix://" + filepath.Join(dir, "cri.sock")
		iso, err := procruntime.ParseIsolation(a.cfg.Isolation)
		if err != nil {
			return fmt.Errorf("isolation: %w", err)
		}
		rt, err := procruntime.Start(procruntime.Options{
			RootDir: dir, HostIP: a.cfg.NodeIP, Isolation: iso, HostFilesystem: a.cfg.HostFilesystem,
			HidePaths: []string{a.cfg.RootDir, a.cfg.PodLogsDir},
		}, endpoint)
		if err != nil {
			return fmt.Errorf("start the embedded process runtime: %w", err)
		}
		a.onShutdown(rt.Stop) // containers keep running under their shims
		klog.InfoS("Embedded process runtime started", "endpoint", endpoint, "isolation", iso)
	}
	dialCtx, cancel := context.WithTimeout(ctx, 30*time.Second)
	defer cancel()
	client, err := cri.Dial(dialCtx, endpoint, cri.WithTimeout(a.cfg.RuntimeRequestTimeout), cri.WithLongTimeout(2*a.cfg.RuntimeRequestTimeout))
	if err != nil {
		return fmt.Errorf("connect to the container runtime: %w", err)
	}
	a.onShutdown(func() { _ = client.Close() })
	a.runtime = client
	if v, err := client.Version(dialCtx, "v1"); err == nil {
		a.runtimeVer = v.RuntimeName + "://" + v.RuntimeVersion
	}
	return nil
}

func (a *Agent) startBus(ctx context.Context) error {
	n := a.cfg.NATS
	opts := bus.Options{
		URL: n.URL, User: n.User, Password: n.Password, Token: n.Token, CredsFile: n.CredsFile,
		TLSCA: n.TLSCA, TLSCert: n.TLSCert, TLSKey: n.TLSKey,
		EmbeddedHost: n.Host, EmbeddedPort: n.Port,
		EmbeddedTLSCert: n.EmbeddedTLSCert, EmbeddedTLSKey: n.EmbeddedTLSKey,
		LeafURL: n.LeafURL, LeafCreds: n.LeafCreds, HubDomain: n.HubDomain, EdgeNode: a.cfg.NodeName,
		StoreDir: filepath.Join(a.cfg.RootDir, "nats"),
		Name:     "actorlet-" + a.cfg.NodeName,
	}
	return a.connectBus(ctx, opts)
}

// startActors spawns the actor tree:
//
//	supervisor (sync loop)
//	├── pleg
//	├── prober ── one worker per (pod, container, probe kind)
//	├── status ── status sink (the bus)
//	└── <pod uid> … one pod actor per pod
func (a *Agent) startActors() error {
	cfg := a.cfg
	a.admission = newRuntimeAdmission(a.runtimeVer)
	cache := pleg.NewCache(clock.RealClock{})
	publisher, err := publish.NewStatusPublisher(publish.StatusConfig{JS: a.conn.JS, NodeName: cfg.NodeName})
	if err != nil {
		return fmt.Errorf("start the status publisher: %w", err)
	}
	a.onShutdown(publisher.Stop)
	a.statuses = publisher
	sink := &agentSink{next: publisher, metrics: a.metrics}

	plegCfg := pleg.Config{Runtime: a.manager, CRI: a.runtime, Cache: cache, RelistPeriod: cfg.RelistPeriod, NodeName: cfg.NodeName,
		Observer: a.metrics.observeRelist, EventObserver: a.observeLifecycle}
	if err := plegCfg.Validate(); err != nil {
		return err
	}
	statusCfg := status.Config{Sink: sink}
	if err := statusCfg.Validate(); err != nil {
		return err
	}
	supCfg := supervisor.Config{
		Runtime:        managerAdapter{a.manager},
		Cache:          cache,
		Clock:          clock.RealClock{},
		NodeName:       cfg.NodeName,
		NodeLabels:     a.nodeLabels(),
		Allocatable:    nodeAllocatable(cfg.MaxPods, a.reserved, a.ephemeralStorage),
		MaxPods:        cfg.MaxPods,
		ResyncInterval: cfg.SyncFrequency,
		Admit:          a.admission.admitFunc(),
		Recorder:       a.recorder,
		Children: supervisor.Children{
			PLEG: func() (*actor.Props, error) { return pleg.Props(plegCfg) },
			Prober: func() (*actor.Props, error) {
				return prober.Props(prober.Config{Exec: a.runtime, Recorder: a.recorder, Redact: a.manager.Redact})
			},
			Status: func() (*actor.Props, error) { return status.Props(statusCfg) },
		},
		PropsOptions: append(a.metrics.actorPropsOptions(), actor.WithReceiverMiddleware(cfg.ReceiverMiddleware...)),
	}
	if a.imageGC != nil {
		supCfg.ImageGC, supCfg.ImageGCPeriod = a.imageGC, cfg.ImageGCPeriod
	}
	evCfg, err := a.evictionConfig()
	if err != nil {
		return err
	}
	if evCfg != nil {
		supCfg.Children.Eviction = func() (*actor.Props, error) { return eviction.Props(*evCfg) }
	}
	if err := supCfg.Validate(); err != nil {
		return err
	}
	a.system = supervisor.NewActorSystem()
	handles, err := supervisor.Spawn(a.system.Root, supCfg)
	if err != nil {
		return err
	}
	a.actors = handles
	pid := handles.Supervisor
	a.onShutdown(func() {
		if err := a.system.Root.StopFuture(pid).Wait(); err != nil {
			klog.ErrorS(err, "Supervisor did not stop in time")
		}
		a.system.Shutdown()
	})
	return nil
}

// replayOnSupervisorRestart hands a supervisor restarted by supervision (a
// panic in the sync loop) the desired pods again: its state went with the
// failed incarnation, the sources' state is in the mux, and the new pod
// actors adopt the containers that are running.
func (a *Agent) replayOnSupervisorRestart() {
	sub := a.system.EventStream.Subscribe(func(evt interface{}) {
		e, ok := evt.(*actor.SupervisorEvent)
		if !ok || e.Directive != actor.RestartDirective || !e.Child.Equal(a.actors.Supervisor) {
			return
		}
		klog.ErrorS(fmt.Errorf("%v", e.Reason), "Sync loop failed and is restarted; replaying the desired pods")
		if l := a.labels.Load(); l != nil {
			a.system.Root.Send(a.actors.Supervisor, &messages.NodeLabelsChanged{Labels: maps.Clone(l.Labels)})
		}
		ready, ok := a.mux.Replay()
		if ok {
			a.system.Root.Send(a.actors.Supervisor, &ready)
		}
		if a.shuttingDown.Load() {
			// The new incarnation goes on with the node shutdown (the
			// waiting runNodeShutdown lets the system go at its deadline).
			a.system.Root.Send(a.actors.Supervisor, &messages.StartNodeShutdown{Groups: a.cfg.shutdownGroups()})
		}
	})
	a.onShutdown(func() { a.system.EventStream.Unsubscribe(sub) })
}

func (a *Agent) startSources(ctx context.Context) error {
	cfg := a.cfg
	root := a.system.Root
	m := mux.New(func(u messages.PodUpdate) {
		a.metrics.observeUpdate(u)
		a.admission.precheck(&u) // disk lookups here, not in the sync loop
		root.Send(a.actors.Supervisor, &u)
	})
	m.SetRecorder(a.recorder)
	m.OnReady(func(r messages.SourcesReady) {
		root.Send(a.actors.Supervisor, &r)
		if cfg.PodManifestPath != "" {
			// Not m.Pods here: the mux calls OnReady holding its lock.
			go func() { a.statuses.PruneStale(ctx, messages.SourceFile, publish.Refs(m.Pods(messages.SourceFile))) }()
		}
	})
	a.mux = m
	a.replayOnSupervisorRestart()
	// Register every source before any of them delivers, so readiness waits
	// for all of them.
	remoteOut := m.Channel(messages.SourceRemote)
	var fileOut func(messages.PodUpdate)
	if cfg.PodManifestPath != "" {
		fileOut = m.Channel(messages.SourceFile)
	}
	if fileOut != nil {
		src, err := file.Start(ctx, file.Config{Dir: cfg.PodManifestPath, NodeName: cfg.NodeName, Out: fileOut, Recorder: a.recorder})
		if err != nil {
			return fmt.Errorf("start the static pod source: %w", err)
		}
		a.onShutdown(src.Stop)
	}
	src, err := remote.Start(ctx, remote.Config{
		Bus: a.conn, NodeName: cfg.NodeName, NodeLabels: a.nodeLabels(), NodeTaints: cfg.RegisterWithTaints, Out: remoteOut, Statuses: a.statuses, Recorder: a.recorder,
		OnInvalid: func(key string, err error) { a.metrics.invalidUpdates.Inc() },
		OnRemove:  func(cause remote.RemovalCause) { a.metrics.removals.WithLabelValues(string(cause)).Inc() },
	})
	if err != nil {
		return fmt.Errorf("start the remote pod source: %w", err)
	}
	a.remote = src
	a.statuses.FinalizeWith(src.Finalize)
	a.onShutdown(src.Stop)
	return nil
}

func (a *Agent) startNodeServices(ctx context.Context) error {
	cfg := a.cfg
	hb, err := publish.StartHeartbeat(ctx, publish.HeartbeatConfig{
		JS: a.conn.JS, NodeName: cfg.NodeName, Period: cfg.NodeStatusUpdateFrequency,
		Conditions: a.nodeConditions, Version: Version, RuntimeVersion: a.runtimeVer,
		Labels: cfg.NodeLabels, Taints: cfg.RegisterWithTaints, MaxPods: cfg.MaxPods,
		Reserved: a.reserved, EphemeralStorage: a.ephemeralStorage,
	})
	if err != nil {
		return fmt.Errorf("start the node heartbeat: %w", err)
	}
	a.onShutdown(hb.Stop)
	a.heartbeat = hb
	node := &commands.ActorNode{
		Root: a.system.Root, Supervisor: a.actors.Supervisor, Status: a.actors.Status, Prober: a.actors.Prober,
		Runtime: a.runtime, BackOffs: a.manager.BackOffs,
		Placement: func(labels map[string]string, taints []v1.Taint) {
			a.SetNodePlacement(labels, taints)
			hb.SetPlacement(labels, taints)
			go func() { _ = hb.Beat(context.Background()) }() // show it now, not at the next period
		},
	}
	if st, ok := a.runtime.(commands.StreamingRuntime); ok {
		node.Streaming = st
	}
	svc, err := commands.StartService(a.conn.NC, node, commands.ServiceOptions{
		NodeName: cfg.NodeName, Version: Version, DenyExec: !cfg.AllowExec, DenyLogs: !cfg.AllowLogs,
		Sessions: commands.SessionOptions{MaxSessions: cfg.MaxInteractiveSessions, IdleTimeout: cfg.StreamingConnectionIdleTimeout},
	})
	if err != nil {
		return fmt.Errorf("start the command service: %w", err)
	}
	a.onShutdown(func() { _ = svc.Stop() })
	a.metrics.reg.MustRegister(prometheus.NewGaugeFunc(prometheus.GaugeOpts{Name: "actorlet_interactive_sessions",
		Help: "Interactive sessions (exec -it, attach, port-forward connections) the node holds."},
		func() float64 { return float64(svc.OpenSessions()) }))
	if cc, ok := a.runtime.(criCallCounter); ok {
		a.metrics.reg.MustRegister(criCalls{cc})
	}
	a.metrics.register(a)
	a.startGracefulShutdown()
	if cfg.HealthzPort > 0 {
		stop, err := serveHTTP(net.JoinHostPort(cfg.HealthzBindAddress, fmt.Sprint(cfg.HealthzPort)), a)
		if err != nil {
			return err
		}
		a.onShutdown(stop)
	}
	return nil
}

// nodeConditions asks the supervisor for the node's health.
func (a *Agent) nodeConditions(ctx context.Context) (messages.NodeConditions, error) {
	if _, ok := ctx.Deadline(); !ok {
		var cancel context.CancelFunc
		ctx, cancel = context.WithTimeout(ctx, 5*time.Second)
		defer cancel()
	}
	c, err := actorutil.Ask[*messages.NodeConditions](ctx, a.system.Root, a.actors.Supervisor, &messages.GetNodeConditions{})
	if err != nil {
		return messages.NodeConditions{}, fmt.Errorf("ask the supervisor for node conditions: %w", err)
	}
	return *c, nil
}

func (a *Agent) nodeLabels() map[string]string {
	l := map[string]string{
		"kubernetes.io/hostname": a.cfg.NodeName,
		"kubernetes.io/os":       runtime.GOOS,
		"kubernetes.io/arch":     runtime.GOARCH,
	}
	for k, v := range a.cfg.NodeLabels {
		l[k] = v
	}
	return l
}

// managerAdapter presents the runtime manager's SyncPod result as an error,
// the shape pod actors use.
type managerAdapter struct{ *kuberuntime.Manager }

func (m managerAdapter) SyncPod(ctx context.Context, pod *v1.Pod, status *cri.PodStatus, probes cri.Probes) error {
	return m.Manager.SyncPod(ctx, pod, status, probes).Error()
}

var _ supervisor.Runtime = managerAdapter{}

// allocatable is what admission checks pods against: the machine's CPUs and
// memory, and the pod limit.
// nodeAllocatable is the node's capacity minus its reservations, as the
// kubelet's Allocatable.
func nodeAllocatable(maxPods int, reserved allocatable.Config, ephemeral *resource.Quantity) v1.ResourceList {
	capacity := allocatable.Capacity(maxPods, memTotal())
	if ephemeral != nil {
		capacity[v1.ResourceEphemeralStorage] = *ephemeral
	}
	return reserved.Allocatable(capacity)
}

func memTotal() int64 {
	data, err := os.ReadFile("/proc/meminfo")
	if err != nil {
		return 0
	}
	var kb int64
	if _, err := fmt.Sscanf(string(data), "MemTotal: %d kB", &kb); err != nil {
		return 0
	}
	return kb * 1024
}

// agentSink sits between the status actor and the publisher to feed the
// pod start metric.
type agentSink struct {
	next    status.Sink
	metrics *agentMetrics
}

func (s *agentSink) PodStatusChanged(c messages.PodStatusChanged) {
	s.next.PodStatusChanged(c)
	s.metrics.observeStatus(c.Pod)
}

func (s *agentSink) PodStatusRemoved(pod *v1.Pod) {
	s.next.PodStatusRemoved(pod)
	s.metrics.forget(pod.UID)
}

// SetNodePlacement replaces, at run time, the labels (besides the
// well-known hostname/os/arch ones) and taints by which fleet pods are
// placed on this node: waiting fleet pods that now fit start, and
// untolerated NoExecute taints evict running ones; node pods applied from
// now on are admitted against the new labels. (The node entry in the
// nodes bucket keeps the start-up labels and taints.)
func (a *Agent) SetNodePlacement(labels map[string]string, taints []v1.Taint) {
	merged := map[string]string{}
	for k, v := range a.nodeLabels() {
		if _, user := a.cfg.NodeLabels[k]; !user {
			merged[k] = v
		}
	}
	for k, v := range labels {
		merged[k] = v
	}
	a.remote.SetNode(merged, taints)
	admission := make(map[string]string, len(merged))
	for k, v := range merged {
		admission[k] = v
	}
	m := &messages.NodeLabelsChanged{Labels: admission}
	a.labels.Store(m)
	a.system.Root.Send(a.actors.Supervisor, m)
}
