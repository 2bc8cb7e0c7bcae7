package kuberuntime

import (
	"fmt"
	"strings"

	v1 "k8s.io/api/core/v1"
)

// podFieldValues are the pod facts env fieldRefs can read.
type podFieldValues struct {
	podIPs []string
	hostIP string
}

// containerEnv resolves c's environment in order; each value may refer to
// variables defined before it with $(VAR).
func containerEnv(pod *v1.Pod, c *v1.Container, f podFieldValues) ([]envPair, error) {
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
		default:
			value = expand(e.Value, defined)
		}
		if e.Name == "" {
			return nil, fmt.Errorf("container %q env[%d].name: must not be empty", c.Name, i)
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

// expand replaces $(VAR) with defined values. $$ escapes a dollar; a
// reference to an undefined variable, or an unclosed one, stays as written.
func expand(s string, defined map[string]string) string {
	if !strings.Contains(s, "$") {
		return s
	}
	var b strings.Builder
	for i := 0; i < len(s); i++ {
		if s[i] != '$' || i+1 >= len(s) {
			b.WriteByte(s[i])
			continue
		}
		switch s[i+1] {
		case '$':
			b.WriteByte('$')
			i++
		case '(':
			end := strings.IndexByte(s[i+2:], ')')
			if end < 0 {
				b.WriteString(s[i:])
				return b.String()
			}
			name := s[i+2 : i+2+end]
			if v, ok := defined[name]; ok {
				b.WriteString(v)
			} else {
				b.WriteString(s[i : i+3+end])
			}
			i += 2 + end
		default:
			b.WriteByte('$')
		}
	}
	return b.String()
}

func expandAll(in []string, defined map[string]string) []string {
	if in == nil {
		return nil
	}
	out := make([]string, len(in))
	for i, s := range in {
		out[i] = expand(s, defined)
	}
	return out
}
