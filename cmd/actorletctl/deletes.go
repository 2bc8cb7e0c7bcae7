package main

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"sort"
	"strings"

	v1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"

	"github.com/actorlet/actorlet/messages/wire"
)

// deleteTarget is one object delete removes: from the command line or from
// a manifest (-f).
type deleteTarget struct {
	source          string // the argument or the manifest's file and document
	kind            string // Pod, ConfigMap or Secret
	namespace, name string
	err             error // the manifest could not be read
}

// argTargets reads delete's arguments: RESOURCE NAME... or RESOURCE/NAME...
func argTargets(pos []string, namespace string) ([]deleteTarget, error) {
	what, names, err := resourceArgs(pos)
	if err != nil {
		return nil, err
	}
	kind, ok := objectKind(what)
	switch {
	case what == "pod" || what == "pods" || what == "po":
		kind = "Pod"
	case !ok:
		return nil, fmt.Errorf("unknown resource %q: want pod, configmap or secret", what)
	}
	if len(names) == 0 {
		return nil, fmt.Errorf("give the %s to delete: delete %s NAME... or delete -f FILE", what, what)
	}
	var out []deleteTarget
	for _, n := range names {
		out = append(out, deleteTarget{source: strings.ToLower(kind) + "/" + n, kind: kind, namespace: namespace, name: n})
	}
	return out, nil
}

// fileTargets reads the objects of manifests for delete -f, in the files'
// order. A pod that does not validate is still deleted by its name.
func (c *cli) fileTargets(files []string, namespace string) ([]deleteTarget, error) {
	var out []deleteTarget
	for _, f := range files {
		ms, err := c.readManifests(f)
		if err != nil {
			return nil, err
		}
		for _, m := range ms {
			t := deleteTarget{source: m.source, namespace: namespace}
			switch {
			case m.pod != nil && m.pod.Name != "":
				t.kind, t.name = "Pod", m.pod.Name
				if m.pod.Namespace != "" {
					t.namespace = m.pod.Namespace
				}
			case m.obj != nil && (m.obj.configMap != nil || m.obj.secret != nil) && m.obj.meta().Name != "":
				t.kind, t.name = m.obj.kind, m.obj.meta().Name
				if ns := m.obj.meta().Namespace; ns != "" {
					t.namespace = ns
				}
			case m.err != nil:
				t.err = m.err
			default:
				t.err = errors.New("metadata.name: required")
			}
			out = append(out, t)
		}
	}
	return out, nil
}

// notFoundHint explains a pod that was not found (by delete: no desired
// entry; by the node commands: no status): a static pod runs from a
// manifest file on its node (name the file), and a static pod's name ends
// in -<node>.
func (c *cli) notFoundHint(ctx context.Context, ns, name string, notFound error) error {
	kv, err := c.bucket(ctx, wire.StatusBucket)
	if err != nil {
		return notFound
	}
	es, _, err := entries(ctx, kv, "*."+wire.EncodeName(ns)+".*", false)
	if err != nil {
		return notFound
	}
	var similar []string
	for _, e := range es {
		var p metav1.PartialObjectMetadata
		if json.Unmarshal(e.Value(), &p) != nil || p.Annotations[wire.StaticAnnotation] != "true" {
			continue
		}
		node := wire.DecodeName(firstToken(e.Key()))
		if p.Name == name {
			file := "a manifest file in its --pod-manifest-path directory"
			if f := p.Annotations[wire.StaticManifestAnnotation]; f != "" {
				file = "the manifest file " + f
			}
			return fmt.Errorf("pod %s/%s is a static pod: node %s runs it from %s; remove that file on the node to stop it (static pods are not deleted through the bus)", ns, name, node, file)
		}
		if strings.HasPrefix(p.Name, name+"-") {
			similar = append(similar, p.Name)
		}
	}
	if len(similar) > 0 {
		sort.Strings(similar)
		return fmt.Errorf("%w; static pods are named <name>-<node>: did you mean %s?", notFound, strings.Join(similar, ", "))
	}
	return notFound
}

// waitDeleted watches the StatusBucket until every deleted pod's status is
// gone from its node(s) (the node finished it), printing a line whenever a
// pod's progress changes, in apply --wait's style.
func (c *cli) waitDeleted(ctx context.Context, pods []applied) error {
	last := make([]string, len(pods))
	pending := func(i int, byNode map[string]*v1.Pod) string {
		if len(byNode) > 0 {
			return pods[i].pod.Name
		}
		return ""
	}
	return c.watchPods(ctx, pods, true, "timed out waiting for pods to be gone: %s (raise --wait-timeout, see describe pod NAME, or delete again with --now)", pending,
		func(statuses []map[string]*v1.Pod) (bool, error) {
			gone := 0
			for i, a := range pods {
				line := fmt.Sprintf("pod/%s: gone", a.pod.Name)
				if len(statuses[i]) > 0 {
					line = fmt.Sprintf("pod/%s: %s", a.pod.Name, statusParts(statuses[i]))
				} else {
					gone++
				}
				c.progress(last, i, line)
			}
			return gone == len(pods), nil
		})
}
