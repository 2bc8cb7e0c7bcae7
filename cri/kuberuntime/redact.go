package kuberuntime

import (
	"errors"
	"sort"
	"strings"
	"sync"

	v1 "k8s.io/api/core/v1"
	"k8s.io/apimachinery/pkg/types"
)

// Redacted replaces a Secret's value in what the agent writes: status
// messages, events, log lines.
const Redacted = "[redacted]"

// MinRedactedLen is the shortest Secret value (or line of a multi-line
// value) that is redacted: a shorter one cannot be told from ordinary text
// ("1", "yes") and replacing it would garble every message.
const MinRedactedLen = 4

// maxSecretValuesPerPod bounds the values remembered for one pod (every
// key of every Secret it references, and the lines of multi-line ones).
const maxSecretValuesPerPod = 4096

// secretValues remembers, per pod, the Secret values its containers were
// started with: a Secret updated since still has its old value in the
// containers' environment (and so in what they print).
type secretValues struct {
	mu    sync.Mutex
	byPod map[types.UID]map[string]struct{}
}

func (s *secretValues) add(uid types.UID, values []string) {
	if len(values) == 0 {
		return
	}
	s.mu.Lock()
	defer s.mu.Unlock()
	if s.byPod == nil {
		s.byPod = map[types.UID]map[string]struct{}{}
	}
	set := s.byPod[uid]
	if set == nil {
		set = map[string]struct{}{}
		s.byPod[uid] = set
	}
	for _, v := range values {
		if len(set) >= maxSecretValuesPerPod {
			return
		}
		set[v] = struct{}{}
	}
}

func (s *secretValues) get(uid types.UID) []string {
	s.mu.Lock()
	defer s.mu.Unlock()
	out := make([]string, 0, len(s.byPod[uid]))
	for v := range s.byPod[uid] {
		out = append(out, v)
	}
	return out
}

func (s *secretValues) forget(uid types.UID) {
	s.mu.Lock()
	defer s.mu.Unlock()
	delete(s.byPod, uid)
}

// redactable splits a Secret value into what is redacted: the value, and
// each line of a multi-line one (a key or certificate quoted line by
// line), those shorter than MinRedactedLen left out.
func redactable(v string) []string {
	var out []string
	if len(v) >= MinRedactedLen {
		out = append(out, v)
	}
	if strings.ContainsAny(v, "\r\n") {
		for _, l := range strings.FieldsFunc(v, func(r rune) bool { return r == '\n' || r == '\r' }) {
			if l = strings.TrimSpace(l); len(l) >= MinRedactedLen && l != v {
				out = append(out, l)
			}
		}
	}
	return out
}

// podSecretValues is every Secret value pod can hold: those its containers
// were started with, and the current values of every Secret its spec
// references (env secretKeyRef, envFrom secretRef, secret volumes and
// projected secret sources). Reading them needs no I/O (the node's object
// store is in memory).
func (m *Manager) podSecretValues(pod *v1.Pod) []string {
	if pod == nil {
		return nil
	}
	values := m.secrets.get(pod.UID)
	if m.opts.Objects == nil {
		return values
	}
	seen := map[string]bool{}
	addSecret := func(name, key string) {
		if name == "" || seen[name+"\x00"+key] {
			return
		}
		seen[name+"\x00"+key] = true
		sec, err := m.opts.Objects.Secret(pod.Namespace, name)
		if err != nil || sec == nil {
			return
		}
		for k, v := range sec.Data {
			if key == "" || k == key {
				values = append(values, redactable(string(v))...)
			}
		}
		for k, v := range sec.StringData {
			if key == "" || k == key {
				values = append(values, redactable(v)...)
			}
		}
	}
	for _, c := range allContainers(pod) {
		for _, e := range c.Env {
			if e.ValueFrom != nil && e.ValueFrom.SecretKeyRef != nil {
				addSecret(e.ValueFrom.SecretKeyRef.Name, e.ValueFrom.SecretKeyRef.Key)
			}
		}
		for _, f := range c.EnvFrom {
			if f.SecretRef != nil {
				addSecret(f.SecretRef.Name, "")
			}
		}
	}
	for i := range pod.Spec.Volumes {
		vs := &pod.Spec.Volumes[i].VolumeSource
		if vs.Secret != nil {
			addSecret(vs.Secret.SecretName, "")
		}
		if vs.Projected != nil {
			for _, src := range vs.Projected.Sources {
				if src.Secret != nil {
					addSecret(src.Secret.Name, "")
				}
			}
		}
	}
	return values
}

// Redact replaces every Secret value pod can hold (podSecretValues) in s
// with Redacted. It is what every status message, event and log line the
// manager writes about a pod goes through; the prober uses it for probe
// output.
func (m *Manager) Redact(pod *v1.Pod, s string) string {
	if pod == nil || s == "" {
		return s
	}
	return redactWith(m.podSecretValues(pod), s)
}

func redactWith(values []string, s string) string {
	var hit []string
	for _, v := range values {
		if strings.Contains(s, v) {
			hit = append(hit, v)
		}
	}
	if len(hit) == 0 {
		return s
	}
	// Longest first, so a value that contains another is replaced whole.
	sort.Slice(hit, func(i, j int) bool { return len(hit[i]) > len(hit[j]) })
	pairs := make([]string, 0, 2*len(hit))
	for _, v := range hit {
		pairs = append(pairs, v, Redacted)
	}
	return strings.NewReplacer(pairs...).Replace(s)
}

// redactErr returns err with the Secret values in its message redacted,
// keeping its kind (errors.Is still matches the kind and the cause).
func (m *Manager) redactErr(pod *v1.Pod, err error) error {
	if err == nil {
		return nil
	}
	values := m.podSecretValues(pod)
	var ke *kindError
	if errors.As(err, &ke) {
		if msg := redactWith(values, ke.msg); msg != ke.msg {
			cp := *ke
			cp.msg = msg
			return &cp
		}
		return err
	}
	if msg := redactWith(values, err.Error()); msg != err.Error() {
		return &redactedError{msg: msg, cause: err}
	}
	return err
}

// redactedError is an error whose message was redacted; errors.Is and As
// still reach the original.
type redactedError struct {
	msg   string
	cause error
}

func (e *redactedError) Error() string { return e.msg }
func (e *redactedError) Unwrap() error { return e.cause }

// redactStatus redacts the messages of a generated pod status.
func (m *Manager) redactStatus(pod *v1.Pod, st *v1.PodStatus) {
	values := m.podSecretValues(pod)
	if len(values) == 0 {
		return
	}
	st.Message = redactWith(values, st.Message)
	for _, list := range [][]v1.ContainerStatus{st.InitContainerStatuses, st.ContainerStatuses, st.EphemeralContainerStatuses} {
		for i := range list {
			for _, s := range []*v1.ContainerState{&list[i].State, &list[i].LastTerminationState} {
				if s.Waiting != nil {
					s.Waiting.Message = redactWith(values, s.Waiting.Message)
				}
				if s.Terminated != nil {
					s.Terminated.Message = redactWith(values, s.Terminated.Message)
				}
			}
		}
	}
	for i := range st.Conditions {
		st.Conditions[i].Message = redactWith(values, st.Conditions[i].Message)
	}
}
