package kuberuntime

import (
	"fmt"
	"sort"
	"strings"

	v1 "k8s.io/api/core/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	"k8s.io/apimachinery/pkg/util/validation"

	"github.com/actorlet/actorlet/cri/volume"
)

// podFieldValues are the pod facts env fieldRefs can read.
type podFieldValues struct {
	podIPs      []string
	hostIP      string
	allocatable v1.ResourceList
	container   string // the container whose env this is
	objects     volume.Objects
	// skipped collects envFrom keys that are not valid variable names
	// (the kubelet skips them and says so in an event).
	skipped *[]string
	// secrets, when set, collects the Secret values the env resolves
	// (redacted from what the agent writes: redact.go).
	secrets *[]string
}

// containerEnv resolves c's environment in order; each value may refer to
// variables defined before it with $(VAR).
//
// envFrom sources come first (their keys in order, with the prefix), then
// env, which overrides a name envFrom set. A ConfigMap or Secret that is
// missing, or a key it lacks, is an error unless the reference is
// optional; an optional env reference that cannot be resolved leaves the
// variable unset. Errors name objects and keys, never values.
func containerEnv(pod *v1.Pod, c *v1.Container, f podFieldValues, budget *envBudget) ([]envPair, error) {
	var out []envPair
	index := map[string]int{}
	defined := map[string]string{}
	set := func(k, v string) {
		defined[k] = v
		if i, ok := index[k]; ok {
			out[i].value = v
			return
		}
		index[k] = len(out)
		out = append(out, envPair{k, v})
	}
	for i, from := range c.EnvFrom {
		data, kind, name, err := envFromData(pod, from, f)
		if err != nil {
			return nil, fmt.Errorf("container %q envFrom[%d]: %w", c.Name, i, err)
		}
		keys := make([]string, 0, len(data))
		for k := range data {
			keys = append(keys, k)
		}
		sort.Strings(keys)
		var invalid []string
		for _, k := range keys {
			name := from.Prefix + k
			if len(validation.IsEnvVarName(name)) > 0 {
				invalid = append(invalid, name)
				continue
			}
			if err := budget.take(fmt.Sprintf("container %q envFrom[%d] %q", c.Name, i, name), len(name)+len(data[k])); err != nil {
				return nil, err
			}
			set(name, data[k])
		}
		if len(invalid) > 0 && f.skipped != nil {
			*f.skipped = append(*f.skipped, fmt.Sprintf("Keys [%s] from the EnvFrom %s %s/%s were skipped since they are considered invalid environment variable names.",
				strings.Join(invalid, ", "), kind, pod.Namespace, name))
		}
	}
	for i, e := range c.Env {
		if e.Name == "" {
			return nil, fmt.Errorf("container %q env[%d].name: must not be empty", c.Name, i)
		}
		var value string
		switch {
		case e.ValueFrom != nil:
			v, ok, err := envValueFromObject(pod, e.ValueFrom, f)
			if err != nil {
				return nil, fmt.Errorf("container %q env[%d] %q: %w", c.Name, i, e.Name, err)
			}
			if !ok {
				continue // optional and not there
			}
			value = v
			if err := budget.take(fmt.Sprintf("container %q env[%d] %q", c.Name, i, e.Name), len(v)); err != nil {
				return nil, err
			}
		default:
			v, err := expand(e.Value, defined, fmt.Sprintf("container %q env[%d] %q", c.Name, i, e.Name), budget)
			if err != nil {
				return nil, err
			}
			value = v
		}
		if err := budget.take(fmt.Sprintf("container %q env[%d].name", c.Name, i), len(e.Name)); err != nil {
			return nil, err
		}
		set(e.Name, value)
	}
	return out, nil
}

// envFromData is the data of one envFrom source (nil if optional and
// missing), with its kind and name for messages.
func envFromData(pod *v1.Pod, from v1.EnvFromSource, f podFieldValues) (map[string]string, string, string, error) {
	switch {
	case from.ConfigMapRef != nil:
		ref := from.ConfigMapRef
		if f.objects == nil {
			return nil, "configMap", ref.Name, fmt.Errorf("configMapRef %q: no ConfigMap source on this node", ref.Name)
		}
		cm, err := f.objects.ConfigMap(pod.Namespace, ref.Name)
		if err != nil {
			if apierrors.IsNotFound(err) && ref.Optional != nil && *ref.Optional {
				return nil, "configMap", ref.Name, nil
			}
			return nil, "configMap", ref.Name, fmt.Errorf("configmap %q not found", ref.Name)
		}
		out := make(map[string]string, len(cm.Data)+len(cm.BinaryData))
		for k, v := range volume.ConfigMapData(cm) {
			out[k] = string(v)
		}
		return out, "configMap", ref.Name, nil
	case from.SecretRef != nil:
		ref := from.SecretRef
		if f.objects == nil {
			return nil, "secret", ref.Name, fmt.Errorf("secretRef %q: no Secret source on this node", ref.Name)
		}
		sec, err := f.objects.Secret(pod.Namespace, ref.Name)
		if err != nil {
			if apierrors.IsNotFound(err) && ref.Optional != nil && *ref.Optional {
				return nil, "secret", ref.Name, nil
			}
			return nil, "secret", ref.Name, fmt.Errorf("secret %q not found", ref.Name)
		}
		out := make(map[string]string, len(sec.Data))
		for k, v := range sec.Data {
			out[k] = string(v)
			if f.secrets != nil {
				*f.secrets = append(*f.secrets, redactable(string(v))...)
			}
		}
		return out, "secret", ref.Name, nil
	}
	return nil, "", "", fmt.Errorf("one of configMapRef and secretRef must be set")
}

// envValueFromObject resolves a valueFrom; ok is false for an optional
// ConfigMap or Secret key that is not there.
func envValueFromObject(pod *v1.Pod, from *v1.EnvVarSource, f podFieldValues) (string, bool, error) {
	var (
		data     map[string][]byte
		kind     string
		name     string
		key      string
		optional bool
		err      error
	)
	switch {
	case from.ConfigMapKeyRef != nil:
		r := from.ConfigMapKeyRef
		kind, name, key, optional = "ConfigMap", r.Name, r.Key, r.Optional != nil && *r.Optional
		if f.objects == nil {
			return "", false, fmt.Errorf("configMapKeyRef %q: no ConfigMap source on this node", name)
		}
		var cm *v1.ConfigMap
		if cm, err = f.objects.ConfigMap(pod.Namespace, name); err == nil {
			data = volume.ConfigMapData(cm)
		}
	case from.SecretKeyRef != nil:
		r := from.SecretKeyRef
		kind, name, key, optional = "Secret", r.Name, r.Key, r.Optional != nil && *r.Optional
		if f.objects == nil {
			return "", false, fmt.Errorf("secretKeyRef %q: no Secret source on this node", name)
		}
		var sec *v1.Secret
		if sec, err = f.objects.Secret(pod.Namespace, name); err == nil {
			data = sec.Data
		}
	default:
		v, err := envValueFrom(pod, from, f)
		return v, err == nil, err
	}
	if err != nil {
		if apierrors.IsNotFound(err) && optional {
			return "", false, nil
		}
		return "", false, fmt.Errorf("%s %q not found", strings.ToLower(kind), name)
	}
	v, ok := data[key]
	if !ok {
		if optional {
			return "", false, nil
		}
		return "", false, fmt.Errorf("couldn't find key %s in %s %s/%s", key, kind, pod.Namespace, name)
	}
	if from.SecretKeyRef != nil && f.secrets != nil {
		*f.secrets = append(*f.secrets, redactable(string(v))...)
	}
	return string(v), true, nil
}

type envPair struct{ key, value string }

func envMap(pairs []envPair) map[string]string {
	m := make(map[string]string, len(pairs))
	for _, p := range pairs {
		m[p.key] = p.value
	}
	return m
}

func envValueFrom(pod *v1.Pod, from *v1.EnvVarSource, f podFieldValues) (string, error) {
	if from.ResourceFieldRef != nil {
		return volume.ResourceField(pod, from.ResourceFieldRef, f.container, f.allocatable)
	}
	if from.FieldRef == nil {
		return "", fmt.Errorf("valueFrom: one of fieldRef, resourceFieldRef, configMapKeyRef and secretKeyRef must be set")
	}
	return volume.PodField(pod, from.FieldRef.FieldPath, &volume.PodStatusFields{HostIP: f.hostIP, PodIPs: f.podIPs})
}

// MaxExpandedEnvBytes bounds what one container's environment, command
// and args may add up to once every $(VAR) is expanded (names and values).
// The API server bounds the pod (~1.5 MiB) but not the expansion: three
// levels of 1,000 references in a 15 KB pod would otherwise expand to
// ~100 GB. 1 MiB is half the usual execve budget (ARG_MAX, 2 MiB), so a
// container within it can still be started.
const MaxExpandedEnvBytes = 1 << 20

// envBudget counts the bytes a container's expansion has produced.
type envBudget struct{ left int }

func newEnvBudget() *envBudget { return &envBudget{left: MaxExpandedEnvBytes} }

// take charges n bytes for field; the error names the field and the limit.
func (b *envBudget) take(field string, n int) error {
	if n > b.left {
		return fmt.Errorf("%s: expanded environment, command and args exceed the %d-byte limit (MaxExpandedEnvBytes)", field, MaxExpandedEnvBytes)
	}
	b.left -= n
	return nil
}

// expand replaces $(VAR) with defined values, in one pass: the result of
// an expansion is never expanded again (a value holding "$(X)" stays
// literal), as the kubelet's expansion package does. $$ escapes a dollar; a
// reference to an undefined variable, or an unclosed one, stays as written.
// The output is charged to budget as it grows, so a reference bomb fails
// before it allocates.
func expand(s string, defined map[string]string, field string, budget *envBudget) (string, error) {
	if !strings.Contains(s, "$") {
		return s, budget.take(field, len(s))
	}
	var b strings.Builder
	emit := func(str string) error {
		if err := budget.take(field, len(str)); err != nil {
			return err
		}
		b.WriteString(str)
		return nil
	}
	start := 0 // s[start:i] is literal text not yet emitted
	for i := 0; i < len(s); i++ {
		if s[i] != '$' || i+1 >= len(s) {
			continue
		}
		switch s[i+1] {
		case '$':
			if err := emit(s[start : i+1]); err != nil {
				return "", err
			}
			i++
			start = i + 1
		case '(':
			end := strings.IndexByte(s[i+2:], ')')
			if end < 0 {
				i = len(s)
				continue
			}
			name := s[i+2 : i+2+end]
			if v, ok := defined[name]; ok {
				if err := emit(s[start:i]); err != nil {
					return "", err
				}
				if err := emit(v); err != nil {
					return "", err
				}
				start = i + 3 + end
			}
			i += 2 + end
		}
	}
	if err := emit(s[start:]); err != nil {
		return "", err
	}
	return b.String(), nil
}

func expandAll(in []string, defined map[string]string, field string, budget *envBudget) ([]string, error) {
	if in == nil {
		return nil, nil
	}
	out := make([]string, len(in))
	for i, s := range in {
		v, err := expand(s, defined, fmt.Sprintf("%s[%d]", field, i), budget)
		if err != nil {
			return nil, err
		}
		out[i] = v
	}
	return out, nil
}
