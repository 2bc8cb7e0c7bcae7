package chaos

import (
	"encoding/json"
	"fmt"
	"sort"
	"strconv"
	"strings"
	"sync"
	"time"

	v1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/types"

	"github.com/actorlet/actorlet/messages/wire"
)

// namespace of every pod of the run.
const namespace = "chaos"

// Environment of every container: the run, the pod and (downward API) the
// node it runs on, so the checker finds each pod's processes in /proc.
const (
	envRun  = "CHAOS_RUN"
	envPod  = "CHAOS_POD"
	envNode = "CHAOS_NODE"
)

// genAnnotation counts the updates of a pod (an update changes only it,
// which must not restart the container).
const genAnnotation = "chaos.actorlet.io/gen"

// podState is what the operator did with one desired key. Every pod name
// is used once, so a name is one key's life: created, updated, deleted.
type podState struct {
	name    string
	key     string
	fleet   bool
	node    string            // node pods
	sel     map[string]string // fleet pods
	targets []string          // nodes that must run it
	uid     types.UID

	gen      int // last generation written (acknowledged or not)
	ackedGen int // last generation acknowledged (0: the create was not)

	createAcked  time.Time
	deleteIssued time.Time // the first delete attempt began (the key may be gone from then on)
	deleteAcked  time.Time
}

// protected: the key certainly exists (its create was acknowledged and no
// delete was attempted): nothing may kill its pod.
func (p *podState) protected() bool { return !p.createAcked.IsZero() && p.deleteIssued.IsZero() }

func (p *podState) targets1(node string) bool {
	for _, n := range p.targets {
		if n == node {
			return true
		}
	}
	return false
}

// podJSON is the pod as the operator writes it at generation gen.
func (p *podState) podJSON(run string, gen int) []byte {
	grace := int64(1)
	pod := v1.Pod{
		TypeMeta: metav1.TypeMeta{APIVersion: "v1", Kind: "Pod"},
		ObjectMeta: metav1.ObjectMeta{Name: p.name, Namespace: namespace, UID: p.uid,
			Annotations: map[string]string{genAnnotation: strconv.Itoa(gen)}},
		Spec: v1.PodSpec{
			NodeName:                      p.node,
			NodeSelector:                  p.sel,
			TerminationGracePeriodSeconds: &grace,
			Containers: []v1.Container{{
				Name: "c", Image: "busybox:1.36", Command: []string{"sleep", "86400"},
				ImagePullPolicy: v1.PullIfNotPresent,
				Env: []v1.EnvVar{
					{Name: envRun, Value: run},
					{Name: envPod, Value: p.name},
					{Name: envNode, ValueFrom: &v1.EnvVarSource{FieldRef: &v1.ObjectFieldSelector{FieldPath: "spec.nodeName"}}},
				},
			}},
		},
	}
	b, err := json.Marshal(&pod)
	if err != nil {
		panic(err)
	}
	return b
}

// statusKey is the pod's status key on node.
func (p *podState) statusKey(node string) string { return wire.StatusKey(node, namespace, p.name) }

// faultRecord is one injected fault.
type faultRecord struct {
	kind      string
	target    string
	start     time.Time
	healed    time.Time // zero while active
	recovery  time.Duration
	recovered bool
}

// violation is a broken invariant.
type violation struct {
	at     time.Time
	kind   string
	pod    string
	node   string
	detail string
}

// opStats counts the operator's writes by kind.
type opStats struct{ acked, failed int }

// model is the run's shared record: pods, operations, faults, violations.
type model struct {
	run   string
	start time.Time
	logf  func(format string, args ...any)

	mu         sync.Mutex
	pods       map[string]*podState
	ops        map[string]*opStats
	faults     []*faultRecord
	violations []violation
	reported   map[string]bool // kind/pod/node already reported

	observedPIDs, observedPlacements int // what the checker saw in /proc

	exits []string // agents that exited by themselves: when, which, why
}

// agentExited records an agent that exited by itself.
func (m *model) agentExited(node, status, last string) {
	m.mu.Lock()
	defer m.mu.Unlock()
	if len(last) > 300 {
		last = last[:300] + "…"
	}
	m.exits = append(m.exits, fmt.Sprintf("%s %s (%s): %s", m.since(time.Now()), node, status, last))
}

func newModel(run string) *model {
	return &model{run: run, start: time.Now(), pods: map[string]*podState{}, ops: map[string]*opStats{}, reported: map[string]bool{}}
}

func (m *model) op(kind string, err error) {
	m.mu.Lock()
	defer m.mu.Unlock()
	s := m.ops[kind]
	if s == nil {
		s = &opStats{}
		m.ops[kind] = s
	}
	if err != nil {
		s.failed++
	} else {
		s.acked++
	}
}

// violate records a violation once per kind, pod and node. Call with m.mu
// held.
func (m *model) violateLocked(kind, pod, node, detail string) {
	id := kind + "/" + pod + "/" + node
	if m.reported[id] {
		return
	}
	m.reported[id] = true
	v := violation{at: time.Now(), kind: kind, pod: pod, node: node, detail: detail}
	m.violations = append(m.violations, v)
	if m.logf != nil { // as it happens, for long runs; the details come at the end
		m.logf("%s violation %s: pod %s on node %q: %s", m.since(v.at), kind, pod, node, detail)
	}
}

// activeLocked reports whether a fault is being injected now, and the
// last time one was healed.
func (m *model) activeLocked() (active bool, lastHeal time.Time) {
	for _, f := range m.faults {
		if f.healed.IsZero() {
			active = true
		} else if f.healed.After(lastHeal) {
			lastHeal = f.healed
		}
	}
	return active, lastHeal
}

// since is t as seconds into the run.
func (m *model) since(t time.Time) string { return fmt.Sprintf("t+%.1fs", t.Sub(m.start).Seconds()) }

// faultsAround lists the faults active within window of t.
func (m *model) faultsAround(t time.Time, window time.Duration) []string {
	m.mu.Lock()
	defer m.mu.Unlock()
	var out []string
	for _, f := range m.faults {
		end := f.healed
		if end.IsZero() {
			end = time.Now()
		}
		if f.start.Before(t.Add(window)) && end.After(t.Add(-window)) {
			healed := "active"
			if !f.healed.IsZero() {
				healed = "healed " + m.since(f.healed)
			}
			out = append(out, fmt.Sprintf("%s %s %s (%s)", m.since(f.start), f.kind, f.target, healed))
		}
	}
	return out
}

// sortedNames is the model's pod names in order.
func (m *model) sortedNamesLocked() []string {
	names := make([]string, 0, len(m.pods))
	for n := range m.pods {
		names = append(names, n)
	}
	sort.Strings(names)
	return names
}

// nodesMatching is the nodes whose labels satisfy sel.
func nodesMatching(nodeLabels map[string]map[string]string, sel map[string]string) []string {
	var out []string
	for n, ls := range nodeLabels {
		ok := true
		for k, v := range sel {
			if ls[k] != v {
				ok = false
			}
		}
		if ok {
			out = append(out, n)
		}
	}
	sort.Strings(out)
	return out
}

// parseLabels reads k=v,k2=v2.
func parseLabels(s string) map[string]string {
	out := map[string]string{}
	for _, kv := range strings.Split(s, ",") {
		if k, v, ok := strings.Cut(kv, "="); ok {
			out[k] = v
		}
	}
	return out
}
