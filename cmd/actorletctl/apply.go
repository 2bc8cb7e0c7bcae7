package main

import (
	"bufio"
	"bytes"
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"os"
	"path/filepath"
	"sort"
	"strings"
	"time"

	"github.com/nats-io/nats.go/jetstream"
	v1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/labels"
	"k8s.io/apimachinery/pkg/util/uuid"
	utilyaml "k8s.io/apimachinery/pkg/util/yaml"

	"github.com/actorlet/actorlet/messages/validation"
	"github.com/actorlet/actorlet/messages/wire"
)

// stringList is a repeatable string flag.
type stringList []string

func (s *stringList) String() string     { return strings.Join(*s, ",") }
func (s *stringList) Set(v string) error { *s = append(*s, v); return nil }

// manifest is one pod, ConfigMap or Secret read from a file.
type manifest struct {
	source string // "file.yaml" or "file.yaml (document 2)"
	pod    *v1.Pod
	obj    *object // a ConfigMap or Secret instead of a pod
	err    error
}

// applied is a pod written to the DesiredBucket, for --wait.
type applied struct {
	pod  *v1.Pod
	node string // empty for a fleet pod
}

func (c *cli) apply(ctx context.Context, args []string) error {
	fs := c.flags("apply")
	var files stringList
	fs.Var(&files, "f", "file, directory (*.yaml, *.yml, *.json) or - for stdin; repeatable")
	node := fs.String("node", "", "node to run the pods on (default: the only registered node); for ConfigMaps and Secrets: the only node that may read them (default: every node)")
	selector := fs.String("selector", "", "run the pods on every node with these labels (k=v,...): a fleet pod")
	wait := fs.Bool("wait", false, "wait until every pod reached the state --for names (or failed)")
	waitFor := fs.String("for", forAuto, "with --wait: ready (condition=Ready), running, completed, or auto: completed for a run-once pod (restartPolicy Never or OnFailure), else ready")
	waitTimeout := fs.Duration("wait-timeout", 5*time.Minute, "how long --wait waits")
	pos, _, err := parse(fs, args)
	if err != nil {
		return err
	}
	forState, err := parseWaitFor(*waitFor)
	if err == nil && forState == forDeleted {
		err = errors.New("--for delete: apply waits for pods to run; wait for a deletion with delete --wait")
	}
	if err != nil {
		return err
	}
	if len(files) == 0 || len(pos) > 0 {
		fmt.Fprintln(c.stderr, "error: apply needs -f FILE|DIR|- and no other arguments")
		fs.Usage()
		return errUsage
	}
	if *node != "" && *selector != "" {
		return errors.New("--node and --selector are mutually exclusive")
	}
	var sel labels.Set
	if *selector != "" {
		if sel, err = labels.ConvertSelectorToLabelsMap(*selector); err != nil {
			return fmt.Errorf("--selector %q: %w", *selector, err)
		}
	}
	var manifests []manifest
	for _, f := range files {
		m, err := c.readManifests(f)
		if err != nil {
			return err
		}
		manifests = append(manifests, m...)
	}
	// ConfigMaps and Secrets first, as kubectl users order them: a pod
	// applied in the same run finds them.
	sort.SliceStable(manifests, func(i, j int) bool { return manifests[i].obj != nil && manifests[j].obj == nil })
	var kv jetstream.KeyValue
	target := *node
	runtimeVer := "" // the target node's runtime, when known
	var done []applied
	failed := 0
	for _, m := range manifests {
		if m.err != nil {
			fmt.Fprintf(c.stderr, "error: %s: %v\n", m.source, m.err)
			failed++
			continue
		}
		if m.obj != nil {
			verb, err := c.applyObject(ctx, m.obj, *node)
			if err != nil {
				fmt.Fprintf(c.stderr, "error: %s: %v\n", m.source, err)
				failed++
				continue
			}
			fmt.Fprintf(c.stdout, "%s/%s %s\n", strings.ToLower(m.obj.kind), m.obj.meta().Name, verb)
			continue
		}
		if kv == nil {
			if kv, err = c.bucket(ctx, wire.DesiredBucket); err != nil {
				return err
			}
			if target == "" && sel == nil {
				if target, err = c.onlyNode(ctx); err != nil {
					return err
				}
			}
			if sel == nil {
				runtimeVer = c.nodeRuntime(ctx, target)
			}
		}
		if err := runnableOn(target, runtimeVer, m.pod); err != nil {
			fmt.Fprintf(c.stderr, "error: %s: %v\n", m.source, err)
			failed++
			continue
		}
		a, verb, err := c.applyOne(ctx, kv, m.pod, target, sel)
		if err != nil {
			fmt.Fprintf(c.stderr, "error: %s: %v\n", m.source, err)
			failed++
			continue
		}
		fmt.Fprintf(c.stdout, "pod/%s %s\n", m.pod.Name, verb)
		done = append(done, a)
	}
	if failed > 0 {
		noun := "pods"
		for _, m := range manifests {
			if m.obj != nil {
				noun = "objects"
			}
		}
		return fmt.Errorf("%d of %d %s not applied", failed, len(manifests), noun)
	}
	if *wait {
		wctx, cancel := context.WithTimeout(ctx, *waitTimeout)
		defer cancel()
		return c.waitRunning(wctx, done, forState)
	}
	return nil
}

// readManifests reads every pod in a file, a directory or stdin. Problems
// with one pod are recorded in its manifest so the others still apply.
func (c *cli) readManifests(path string) ([]manifest, error) {
	if path == "-" {
		return splitManifests("stdin", c.stdin)
	}
	st, err := os.Stat(path)
	if err != nil {
		return nil, fmt.Errorf("read %s: %w", path, err)
	}
	if !st.IsDir() {
		return readManifestFile(path)
	}
	ents, err := os.ReadDir(path)
	if err != nil {
		return nil, fmt.Errorf("read directory %s: %w", path, err)
	}
	var names []string
	for _, e := range ents {
		ext := strings.ToLower(filepath.Ext(e.Name()))
		if !e.IsDir() && (ext == ".yaml" || ext == ".yml" || ext == ".json") {
			names = append(names, filepath.Join(path, e.Name()))
		}
	}
	sort.Strings(names)
	if len(names) == 0 {
		return nil, fmt.Errorf("directory %s has no .yaml, .yml or .json files", path)
	}
	var out []manifest
	for _, n := range names {
		m, err := readManifestFile(n)
		if err != nil {
			return nil, err
		}
		out = append(out, m...)
	}
	return out, nil
}

func readManifestFile(path string) ([]manifest, error) {
	f, err := os.Open(path)
	if err != nil {
		return nil, fmt.Errorf("read %s: %w", path, err)
	}
	defer f.Close()
	return splitManifests(path, f)
}

// splitManifests decodes, defaults and validates each YAML document of r.
func splitManifests(name string, r io.Reader) ([]manifest, error) {
	yr := utilyaml.NewYAMLReader(bufio.NewReader(r))
	var out []manifest
	for doc := 1; ; doc++ {
		data, err := yr.Read()
		if errors.Is(err, io.EOF) {
			break
		}
		if err != nil {
			return nil, fmt.Errorf("read %s: %w", name, err)
		}
		m := manifest{source: name}
		if doc > 1 || len(out) > 0 {
			m.source = fmt.Sprintf("%s (document %d)", name, doc)
		}
		if err := typeMetaError(data); err != nil {
			m.err = err
			out = append(out, m)
			continue
		}
		switch kind, _ := validation.Kind(data); kind {
		case "ConfigMap":
			cm, err := validation.DecodeConfigMap(data)
			m.obj, m.err = &object{kind: kind, configMap: cm}, err
			out = append(out, m)
			continue
		case "Secret":
			s, err := validation.DecodeSecret(data)
			m.obj, m.err = &object{kind: kind, secret: s}, err
			out = append(out, m)
			continue
		}
		pod, err := validation.DecodePod(data)
		if errors.Is(err, validation.ErrEmpty) {
			continue
		}
		if err == nil {
			validation.SetDefaults(pod)
			if verr := validation.ValidatePod(pod); verr != nil {
				err = fmt.Errorf("pod %s/%s is invalid: %w", pod.Namespace, pod.Name, verr)
			}
		}
		m.pod, m.err = pod, err
		out = append(out, m)
	}
	if len(out) == 0 {
		return nil, fmt.Errorf("%s has no pods, ConfigMaps or Secrets", name)
	}
	return out, nil
}

// nodeRuntime is the container runtime node reports in its entry
// ("actorlet-process://0.1.0"), or "" when it has none yet: then the node's
// admission is the only check.
func (c *cli) nodeRuntime(ctx context.Context, node string) string {
	n, err := c.currentNode(ctx, node)
	if err != nil {
		return ""
	}
	return n.Status.NodeInfo.ContainerRuntimeVersion
}

// runnableOn refuses, before it is written, a pod the node's runtime
// cannot run: on the process runtime, a container without a command. (An
// args-only container whose program is missing is only known on the node:
// its admission refuses it; so it does a fleet pod's.)
func runnableOn(node, runtimeVer string, pod *v1.Pod) error {
	if !validation.IsProcessRuntime(runtimeVer) {
		return nil
	}
	if errs := validation.ProcessRuntimeErrors(&pod.Spec, nil); len(errs) > 0 {
		return fmt.Errorf("pod %s/%s cannot run on node %s (runtime %s): %w", pod.Namespace, pod.Name, node, runtimeVer, errs.ToAggregate())
	}
	return nil
}

// onlyNode returns the node registered in the NodesBucket when there is
// exactly one.
func (c *cli) onlyNode(ctx context.Context) (string, error) {
	es, err := c.all(ctx, wire.NodesBucket)
	if err != nil {
		return "", err
	}
	var names []string
	for _, e := range es {
		names = append(names, wire.DecodeName(e.Key()))
	}
	switch len(names) {
	case 1:
		return names[0], nil
	case 0:
		return "", errors.New("no node is registered: give --node NAME or --selector k=v")
	}
	return "", fmt.Errorf("%d nodes are registered (%s): give --node NAME or --selector k=v", len(names), strings.Join(names, ", "))
}

// applyOne writes one pod for node (or, with sel, as a fleet pod), keeping
// the UID and creation time of the pod already there.
func (c *cli) applyOne(ctx context.Context, kv jetstream.KeyValue, pod *v1.Pod, node string, sel labels.Set) (applied, string, error) {
	key := wire.DesiredNodeKey(node, pod.Namespace, pod.Name)
	if sel != nil {
		key = wire.DesiredFleetKey(pod.Namespace, pod.Name)
		pod.Spec.NodeSelector = map[string]string(sel)
		pod.Spec.NodeName = ""
		node = ""
	} else {
		pod.Spec.NodeName = node
	}
	qctx, cancel := context.WithTimeout(ctx, c.g.timeout)
	defer cancel()
	old, verb, err := c.previous(qctx, kv, key, &pod.ObjectMeta)
	if err != nil {
		return applied{}, "", unavailable(err, false)
	}
	data, err := json.Marshal(pod)
	if err != nil {
		return applied{}, "", fmt.Errorf("encode pod: %w", err)
	}
	if old != nil && bytes.Equal(old.Value(), data) {
		return applied{pod: pod, node: node}, "unchanged", nil
	}
	if _, err := kv.Put(qctx, key, data); err != nil {
		return applied{}, "", unavailable(fmt.Errorf("write %s key %q: %w", wire.DesiredBucket, key, err), true)
	}
	return applied{pod: pod, node: node}, verb, nil
}

// previous reads what key holds (old; nil: nothing) before an object is
// applied there and says whether applying creates or configures it. The
// object keeps the UID and creation time of the one stored before it, as
// the API server keeps them on an update, and gets fresh ones where there
// is none to keep.
func (c *cli) previous(ctx context.Context, kv jetstream.KeyValue, key string, meta *metav1.ObjectMeta) (old jetstream.KeyValueEntry, verb string, err error) {
	old, err = kv.Get(ctx, key)
	verb = "configured"
	switch {
	case errors.Is(err, jetstream.ErrKeyNotFound):
		old, verb = nil, "created"
	case err != nil:
		return nil, "", fmt.Errorf("read %s key %q: %w", kv.Bucket(), key, err)
	}
	if old != nil {
		var prev metav1.PartialObjectMetadata
		if json.Unmarshal(old.Value(), &prev) == nil {
			if meta.UID == "" {
				meta.UID = prev.UID
			}
			if meta.CreationTimestamp.IsZero() {
				meta.CreationTimestamp = prev.CreationTimestamp
			}
		}
	}
	if meta.UID == "" {
		meta.UID = uuid.NewUUID()
	}
	if meta.CreationTimestamp.IsZero() {
		meta.CreationTimestamp = metav1.NewTime(c.clock.Now().UTC().Truncate(time.Second))
	}
	return old, verb, nil
}
