package kuberuntime

import (
	"fmt"
	"strings"

	v1 "k8s.io/api/core/v1"

	"github.com/actorlet/actorlet/cri/volume"
)

// podFieldValues are the pod facts env fieldRefs can read.
type podFieldValues struct {
	podIPs      []string
	hostIP      string
	allocatable v1.ResourceList
	container   string // the container whose env this is
}

// containerEnv resolves c's environment in order; each value may refer to
// variables defined before it with $(VAR).
func containerEnv(pod *v1.Pod, c *v1.Container, f podFieldValues, budget *envBudget) ([]envPair, error) {
	if len(c.EnvFrom) > 0 {
		return nil, fmt.Errorf("container %q envFrom: configMap and secret sources are not supported", c.Name)
	}
	var out []envPair
	defined := map[string]string{}
	for i, e := range c.Env {
		var value string
		switch {
		case e.ValueFrom != nil:
			v, err := envValueFrom(pod, e.ValueFrom, f)
			if err != nil {
				return nil, fmt.Errorf("container %q env[%d] %q: %w", c.Name, i, e.Name, err)
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
		if e.Name == "" {
			return nil, fmt.Errorf("container %q env[%d].name: must not be empty", c.Name, i)
		}
		if err := budget.take(fmt.Sprintf("container %q env[%d].name", c.Name, i), len(e.Name)); err != nil {
			return nil, err
		}
		defined[e.Name] = value
		out = append(out, envPair{e.Name, value})
	}
	return out, nil
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
		return "", fmt.Errorf("valueFrom: only fieldRef is supported (no API server for configMap, secret or resource refs)")
	}
	path := from.FieldRef.FieldPath
	switch path {
	case "metadata.name":
		return pod.Name, nil
	case "metadata.namespace":
		return pod.Namespace, nil
	case "metadata.uid":
		return string(pod.UID), nil
	case "spec.nodeName":
		return pod.Spec.NodeName, nil
	case "spec.serviceAccountName":
		return pod.Spec.ServiceAccountName, nil
	case "status.hostIP":
		return f.hostIP, nil
	case "status.podIP":
		if len(f.podIPs) > 0 {
			return f.podIPs[0], nil
		}
		return "", nil
	case "status.podIPs":
		return strings.Join(f.podIPs, ","), nil
	}
	for prefix, src := range map[string]map[string]string{"metadata.labels": pod.Labels, "metadata.annotations": pod.Annotations} {
		if key, ok := subscript(path, prefix); ok {
			return src[key], nil
		}
	}
	return "", fmt.Errorf("valueFrom.fieldRef.fieldPath %q: unsupported field", path)
}

// subscript parses prefix['key'].
func subscript(path, prefix string) (string, bool) {
	rest, ok := strings.CutPrefix(path, prefix+"['")
	if !ok {
		return "", false
	}
	return strings.CutSuffix(rest, "']")
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
