package supervisor

import (
	"fmt"
	"sort"
	"strings"

	v1 "k8s.io/api/core/v1"
	"k8s.io/apimachinery/pkg/types"

	"github.com/actorlet/actorlet/actors/eviction"
)

// Reasons a pod is rejected at admission (the kubelet's).
const (
	ReasonOutOfPods    = "OutOfpods"
	ReasonNodePorts    = "NodePorts"
	ReasonNodeAffinity = "NodeAffinity"
	reasonOutOfPrefix  = "OutOf" // + resource name: OutOfcpu, OutOfmemory
)

// node is what admission checks a pod against.
type node struct {
	labels      map[string]string
	allocatable v1.ResourceList // nil: not checked
	maxPods     int
	runtime     func(*v1.Pod) (reason, message string) // nil: no runtime check
	// shuttingDown refuses every pod: the node is shutting down.
	shuttingDown bool
	// pressure are the node's pressure conditions: the eviction manager's
	// admission refuses pods under them.
	pressure []v1.NodeConditionType
}

// rejection says why a pod was refused.
type rejection struct {
	Reason  string
	Message string
}

// usage is what the active (admitted, not done) pods take of the node:
// their count, summed requests and host ports. The supervisor keeps one,
// updated as pods are admitted and rebuilt after anything else that changes
// which pods are active, so admitting a burst of pods costs O(1) each.
type usage struct {
	pods  int
	used  v1.ResourceList
	ports map[hostPort]int  // bindings by exact ip/protocol/port
	bound map[protoPort]int // bindings by protocol/port, any ip
}

type protoPort struct {
	protocol v1.Protocol
	port     int32
}

func newUsage(active []*v1.Pod) *usage {
	u := &usage{used: v1.ResourceList{}, ports: map[hostPort]int{}, bound: map[protoPort]int{}}
	for _, p := range active {
		u.add(p)
	}
	return u
}

// add counts pod as active; on a nil (stale) usage it does nothing.
func (u *usage) add(pod *v1.Pod) {
	if u == nil {
		return
	}
	u.pods++
	addTo(u.used, podRequests(pod))
	for _, hp := range hostPorts(pod) {
		u.ports[hp]++
		u.bound[protoPort{hp.protocol, hp.port}]++
	}
}

// admit checks pod against the node given what the active pods use. It
// returns nil when the pod may run.
func admit(n node, pod *v1.Pod, u *usage) *rejection {
	if n.shuttingDown {
		return &rejection{ReasonNodeShutdown, messageNodeShutdown}
	}
	if reason, msg := eviction.Admit(pod, n.pressure); reason != "" {
		return &rejection{reason, msg}
	}
	if u.pods+1 > n.maxPods {
		return &rejection{ReasonOutOfPods, fmt.Sprintf("Node didn't have enough resource: pods, requested: 1, used: %d, capacity: %d", u.pods, n.maxPods)}
	}
	if n.allocatable != nil {
		req := podRequests(pod)
		names := make([]string, 0, len(req))
		for name := range req {
			names = append(names, string(name))
		}
		sort.Strings(names)
		for _, name := range names {
			r := req[v1.ResourceName(name)]
			if r.IsZero() {
				continue
			}
			capacity := n.allocatable[v1.ResourceName(name)]
			total := u.used[v1.ResourceName(name)].DeepCopy()
			total.Add(r)
			if total.Cmp(capacity) > 0 {
				used := u.used[v1.ResourceName(name)]
				return &rejection{reasonOutOfPrefix + name, fmt.Sprintf("Node didn't have enough resource: %s, requested: %s, used: %s, capacity: %s",
					name, r.String(), used.String(), capacity.String())}
			}
		}
	}
	if conflicts := portConflicts(pod, u); len(conflicts) > 0 {
		return &rejection{ReasonNodePorts, "Node didn't have free ports for the requested pod ports: " + strings.Join(conflicts, ", ")}
	}
	for k, v := range pod.Spec.NodeSelector {
		if got, ok := n.labels[k]; !ok || got != v {
			return &rejection{ReasonNodeAffinity, fmt.Sprintf("Predicate NodeAffinity failed: node label %s=%q does not match the pod's node selector %s=%q", k, got, k, v)}
		}
	}
	if n.runtime != nil {
		if reason, msg := n.runtime(pod); reason != "" {
			return &rejection{reason, msg}
		}
	}
	return nil
}

// podRequests is the pod's effective request: the larger of the sum of its
// containers' requests and any one init container's, plus its overhead. A
// resource a container limits without requesting it requests its limit,
// as the API server's defaulting (which pods reach the node without) sets
// it: a pod given only limits is checked against Allocatable too.
func podRequests(p *v1.Pod) v1.ResourceList {
	out := v1.ResourceList{}
	for _, c := range p.Spec.Containers {
		addTo(out, containerRequests(c))
	}
	for _, c := range p.Spec.InitContainers {
		for name, q := range containerRequests(c) {
			if cur, ok := out[name]; !ok || q.Cmp(cur) > 0 {
				out[name] = q.DeepCopy()
			}
		}
	}
	addTo(out, p.Spec.Overhead)
	return out
}

// containerRequests is c's requests with the API server's defaulting: a
// limit stands for a missing request.
func containerRequests(c v1.Container) v1.ResourceList {
	out := v1.ResourceList{}
	for name, q := range c.Resources.Limits {
		out[name] = q
	}
	for name, q := range c.Resources.Requests {
		out[name] = q
	}
	return out
}

func addTo(dst, src v1.ResourceList) {
	for name, q := range src {
		cur, ok := dst[name]
		if !ok {
			dst[name] = q.DeepCopy()
			continue
		}
		cur.Add(q)
		dst[name] = cur
	}
}

// hostPort is one host port binding; an empty or 0.0.0.0 IP binds all.
type hostPort struct {
	ip       string
	protocol v1.Protocol
	port     int32
}

func hostPorts(p *v1.Pod) []hostPort {
	var out []hostPort
	for _, c := range p.Spec.Containers {
		for _, cp := range c.Ports {
			if cp.HostPort <= 0 {
				continue
			}
			proto := cp.Protocol
			if proto == "" {
				proto = v1.ProtocolTCP
			}
			ip := cp.HostIP
			if ip == "" {
				ip = "0.0.0.0"
			}
			out = append(out, hostPort{ip, proto, cp.HostPort})
		}
	}
	return out
}

// portConflicts lists the pod's host ports already taken by active pods: the
// same binding, or the same protocol and port where either side binds every
// address (0.0.0.0).
func portConflicts(pod *v1.Pod, u *usage) []string {
	var out []string
	for _, w := range hostPorts(pod) {
		pp := protoPort{w.protocol, w.port}
		taken := u.ports[w] > 0 || u.ports[hostPort{"0.0.0.0", w.protocol, w.port}] > 0 ||
			(w.ip == "0.0.0.0" && u.bound[pp] > 0)
		if taken {
			out = append(out, fmt.Sprintf("%s/%s:%d", w.protocol, w.ip, w.port))
		}
	}
	return out
}

// currentUsage is what the active pods use of the node, rebuilt when stale.
func (s *supervisor) currentUsage() *usage {
	if s.usage == nil {
		s.usage = newUsage(s.activePods())
	}
	return s.usage
}

// activePods are the admitted pods that are not done.
func (s *supervisor) activePods() []*v1.Pod {
	var out []*v1.Pod
	for uid, d := range s.pods {
		if d.rejected || d.done {
			continue
		}
		if w := s.workers[uid]; w != nil && w.workDone() {
			continue
		}
		out = append(out, d.pod)
	}
	return out
}

// terminatedPods are the desired pods whose work is over and that will not
// run again: neither restarting nor added again, nor being cleaned up.
func (s *supervisor) terminatedPods() []types.UID {
	var out []types.UID
	for uid, d := range s.pods {
		if d.rejected || d.readded || s.cleaning[uid] {
			continue
		}
		w := s.workers[uid]
		if d.done && w == nil || w != nil && w.workDone() && !w.report.RestartRequested {
			out = append(out, uid)
		}
	}
	return out
}
