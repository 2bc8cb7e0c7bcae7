package agent

import (
	"context"
	"errors"
	"fmt"
	"net"
	"net/http"
	"strings"
	"sync"
	"sync/atomic"
	"time"

	"github.com/asynkron/protoactor-go/actor"
	"github.com/prometheus/client_golang/prometheus"
	"github.com/prometheus/client_golang/prometheus/collectors"
	"github.com/prometheus/client_golang/prometheus/promhttp"
	v1 "k8s.io/api/core/v1"
	"k8s.io/apimachinery/pkg/types"
	"k8s.io/klog/v2"

	"github.com/actorlet/actorlet/actors/pleg"
	"github.com/actorlet/actorlet/actors/supervisor"
	"github.com/actorlet/actorlet/messages"
	"github.com/actorlet/actorlet/sources/remote"
)

// agentMetrics are the agent's Prometheus metrics: the kubelet's names where
// one applies, and the actor system's own under actorlet_.
type agentMetrics struct {
	reg *prometheus.Registry

	podStart       prometheus.Histogram
	podWorker      *prometheus.HistogramVec
	relistDuration prometheus.Histogram
	relistInterval prometheus.Histogram
	runningPods    prometheus.Gauge
	runningCtrs    prometheus.Gauge
	updates        *prometheus.CounterVec
	invalidUpdates prometheus.Counter
	removals       *prometheus.CounterVec
	messages       *prometheus.CounterVec
	restarts       prometheus.Counter
	mailboxDepth   atomic.Int64

	mu        sync.Mutex
	firstSeen map[types.UID]time.Time // ADD seen, until the pod first runs
	running   map[types.UID]int       // running containers per running pod
}

func newAgentMetrics() *agentMetrics {
	buckets := []float64{.005, .01, .025, .05, .1, .25, .5, 1, 2.5, 5, 10, 30, 60}
	m := &agentMetrics{
		reg: prometheus.NewRegistry(),
		podStart: prometheus.NewHistogram(prometheus.HistogramOpts{Name: "kubelet_pod_start_duration_seconds",
			Help: "Seconds from the agent first seeing a pod to the pod running.", Buckets: buckets}),
		podWorker: prometheus.NewHistogramVec(prometheus.HistogramOpts{Name: "kubelet_pod_worker_duration_seconds",
			Help: "Seconds one pod sync or kill took.", Buckets: buckets}, []string{"operation_type"}),
		relistDuration: prometheus.NewHistogram(prometheus.HistogramOpts{Name: "kubelet_pleg_relist_duration_seconds",
			Help: "Seconds a PLEG relist took.", Buckets: buckets}),
		relistInterval: prometheus.NewHistogram(prometheus.HistogramOpts{Name: "kubelet_pleg_relist_interval_seconds",
			Help: "Seconds between the starts of two PLEG relists.", Buckets: buckets}),
		runningPods: prometheus.NewGauge(prometheus.GaugeOpts{Name: "kubelet_running_pods",
			Help: "Pods with a running phase."}),
		runningCtrs: prometheus.NewGauge(prometheus.GaugeOpts{Name: "kubelet_running_containers",
			Help: "Containers in the running state."}),
		updates: prometheus.NewCounterVec(prometheus.CounterOpts{Name: "actorlet_pod_updates_total",
			Help: "Pods in updates from the config mux to the supervisor, by op."}, []string{"op"}),
		invalidUpdates: prometheus.NewCounter(prometheus.CounterOpts{Name: "actorlet_invalid_pod_updates_total",
			Help: "Desired-pod entries rejected as malformed or invalid."}),
		removals: prometheus.NewCounterVec(prometheus.CounterOpts{Name: "actorlet_remote_pod_removals_total",
			Help: "Pods the remote source removed, by cause (tombstone, purge, absent, placement, taint, shadowed, replaced)."}, []string{"cause"}),
		messages: prometheus.NewCounterVec(prometheus.CounterOpts{Name: "actorlet_actor_messages_handled_total",
			Help: "Messages handled, by actor kind."}, []string{"actor"}),
		restarts: prometheus.NewCounter(prometheus.CounterOpts{Name: "actorlet_actor_restarts_total",
			Help: "Actors restarted by supervision after a failure."}),
		firstSeen: map[types.UID]time.Time{},
		running:   map[types.UID]int{},
	}
	m.reg.MustRegister(m.podStart, m.podWorker, m.relistDuration, m.relistInterval, m.runningPods, m.runningCtrs,
		m.updates, m.invalidUpdates, m.removals, m.messages, m.restarts,
		prometheus.NewGaugeFunc(prometheus.GaugeOpts{Name: "actorlet_actor_mailbox_depth",
			Help: "Messages posted to actor mailboxes and not yet handled, over all actors."},
			func() float64 { return float64(m.mailboxDepth.Load()) }),
		collectors.NewGoCollector(), collectors.NewProcessCollector(collectors.ProcessCollectorOpts{}))
	for _, c := range remote.RemovalCauses { // every cause shows, at 0
		m.removals.WithLabelValues(string(c))
	}
	return m
}

// register hooks the metrics to the running agent's actor system.
func (m *agentMetrics) register(a *Agent) {
	a.system.EventStream.Subscribe(func(evt interface{}) {
		if e, ok := evt.(*actor.SupervisorEvent); ok && e.Directive == actor.RestartDirective {
			m.restarts.Inc()
		}
	})
}

// actorPropsOptions instrument an actor: a mailbox that tracks depth and a
// middleware that counts and times what it handles.
func (m *agentMetrics) actorPropsOptions() []actor.PropsOption {
	return []actor.PropsOption{
		actor.WithMailbox(actor.Unbounded(mailboxStats{m})),
		actor.WithReceiverMiddleware(m.receiverMiddleware),
	}
}

func (m *agentMetrics) receiverMiddleware(next actor.ReceiverFunc) actor.ReceiverFunc {
	return func(c actor.ReceiverContext, env *actor.MessageEnvelope) {
		kind := actorKind(c.Self())
		m.messages.WithLabelValues(kind).Inc()
		if done, ok := env.Message.(*messages.PodSyncCompleted); ok && kind == "supervisor" {
			m.podWorker.WithLabelValues(done.UpdateType.String()).Observe(done.Duration.Seconds())
		}
		next(c, env)
	}
}

// actorKind names an actor by its place in the tree: supervisor, pleg,
// prober, status, probe (a prober worker) or pod.
func actorKind(pid *actor.PID) string {
	if pid == nil {
		return "unknown"
	}
	parts := strings.Split(pid.Id, "/")
	switch {
	case len(parts) == 1:
		return parts[0]
	case len(parts) == 2 && (parts[1] == supervisor.ChildPLEG || parts[1] == supervisor.ChildProber || parts[1] == supervisor.ChildStatus):
		return parts[1]
	case len(parts) >= 3 && parts[1] == supervisor.ChildProber:
		return "probe"
	case len(parts) == 2:
		return "pod"
	}
	return "other"
}

type mailboxStats struct{ m *agentMetrics }

func (s mailboxStats) MailboxStarted()             {}
func (s mailboxStats) MessagePosted(interface{})   { s.m.mailboxDepth.Add(1) }
func (s mailboxStats) MessageReceived(interface{}) { s.m.mailboxDepth.Add(-1) }
func (s mailboxStats) MailboxEmpty()               {}
func (m *agentMetrics) observeRelist(o pleg.RelistObservation) {
	m.relistDuration.Observe(o.Duration.Seconds())
	if o.Interval > 0 {
		m.relistInterval.Observe(o.Interval.Seconds())
	}
}

func (m *agentMetrics) observeUpdate(u messages.PodUpdate) {
	m.updates.WithLabelValues(u.Op.String()).Add(float64(len(u.Pods)))
	if u.Op != messages.OpAdd {
		return
	}
	now := time.Now()
	m.mu.Lock()
	defer m.mu.Unlock()
	for _, p := range u.Pods {
		if _, ok := m.firstSeen[p.UID]; !ok {
			m.firstSeen[p.UID] = now
		}
	}
}

// observeStatus feeds the pod start histogram and the running gauges.
func (m *agentMetrics) observeStatus(pod *v1.Pod) {
	runningCtrs := 0
	for _, cs := range pod.Status.ContainerStatuses {
		if cs.State.Running != nil {
			runningCtrs++
		}
	}
	m.mu.Lock()
	defer m.mu.Unlock()
	if pod.Status.Phase == v1.PodRunning {
		if seen, ok := m.firstSeen[pod.UID]; ok {
			m.podStart.Observe(time.Since(seen).Seconds())
			delete(m.firstSeen, pod.UID)
		}
		m.setRunning(pod.UID, runningCtrs, true)
	} else {
		m.setRunning(pod.UID, 0, false)
	}
}

func (m *agentMetrics) forget(uid types.UID) {
	m.mu.Lock()
	defer m.mu.Unlock()
	delete(m.firstSeen, uid)
	m.setRunning(uid, 0, false)
}

// setRunning records whether uid runs and with how many running containers,
// moving the gauges by the difference (a status change costs O(1), not a
// walk of every pod).
func (m *agentMetrics) setRunning(uid types.UID, ctrs int, running bool) {
	old, was := m.running[uid]
	switch {
	case running && !was:
		m.runningPods.Inc()
	case !running && was:
		m.runningPods.Dec()
	}
	m.runningCtrs.Add(float64(ctrs - old))
	if running {
		m.running[uid] = ctrs
	} else {
		delete(m.running, uid)
	}
}

// serveHTTP serves /healthz and /metrics until the returned stop is called.
func serveHTTP(addr string, a *Agent) (stop func(), err error) {
	mux := http.NewServeMux()
	mux.Handle("/metrics", promhttp.HandlerFor(a.metrics.reg, promhttp.HandlerOpts{}))
	mux.HandleFunc("/healthz", func(w http.ResponseWriter, r *http.Request) {
		if err := a.healthy(r.Context()); err != nil {
			http.Error(w, err.Error(), http.StatusServiceUnavailable)
			return
		}
		fmt.Fprintln(w, "ok")
	})
	l, err := net.Listen("tcp", addr)
	if err != nil {
		return nil, fmt.Errorf("listen for /healthz and /metrics on %s: %w", addr, err)
	}
	srv := &http.Server{Handler: mux, ReadHeaderTimeout: 5 * time.Second}
	go func() {
		if err := srv.Serve(l); err != nil && !errors.Is(err, http.ErrServerClosed) {
			klog.ErrorS(err, "Health server failed")
		}
	}()
	klog.InfoS("Serving /healthz and /metrics", "address", l.Addr().String())
	return func() {
		ctx, cancel := context.WithTimeout(context.Background(), 2*time.Second)
		defer cancel()
		_ = srv.Shutdown(ctx)
	}, nil
}

// healthy is the /healthz check: the bus is connected, the sync loop
// answers, the runtime is ready and PLEG relists.
func (a *Agent) healthy(ctx context.Context) error {
	if !a.conn.NC.IsConnected() {
		return errors.New("not connected to NATS")
	}
	ctx, cancel := context.WithTimeout(ctx, 2*time.Second)
	defer cancel()
	c, err := a.nodeConditions(ctx)
	if err != nil {
		return err
	}
	if !c.RuntimeReady {
		return fmt.Errorf("container runtime not ready: %s", c.RuntimeMessage)
	}
	if !c.PLEGHealthy {
		return fmt.Errorf("PLEG is not healthy: %s", c.PLEGMessage)
	}
	return nil
}
