package main

import (
	"context"
	"encoding/json"
	"flag"
	"fmt"
	"sort"
	"strings"

	v1 "k8s.io/api/core/v1"

	"github.com/actorlet/actorlet/messages/wire"
)

// wellKnown labels are the node's own; label node does not send them.
var wellKnown = map[string]bool{v1.LabelHostname: true, v1.LabelOSStable: true, v1.LabelArchStable: true}

// currentNode reads a node's entry (labels, taints) from the nodes bucket.
func (c *cli) currentNode(ctx context.Context, name string) (*v1.Node, error) {
	kv, err := c.bucket(ctx, wire.NodesBucket)
	if err != nil {
		return nil, err
	}
	qctx, cancel := context.WithTimeout(ctx, c.g.timeout)
	defer cancel()
	e, err := kv.Get(qctx, wire.EncodeName(name))
	if err != nil {
		return nil, fmt.Errorf("node %q: %w", name, err)
	}
	var n v1.Node
	if err := json.Unmarshal(e.Value(), &n); err != nil {
		return nil, fmt.Errorf("decode node %q: %w", name, err)
	}
	return &n, nil
}

// nodeEdit is a label or taint command line: the node it names as it is
// now, its own labels (not the well-known ones the node sets itself), and
// the edits asked for.
type nodeEdit struct {
	name   string
	node   *v1.Node
	labels map[string]string
	edits  []string
}

// nodeEdit parses `<verb> node NAME EDIT...` (usage says so when it is
// not) and reads the node.
func (c *cli) nodeEdit(ctx context.Context, fs *flag.FlagSet, args []string, usage string) (*nodeEdit, error) {
	pos, _, err := parse(fs, args)
	if err != nil {
		return nil, err
	}
	if len(pos) < 3 || (pos[0] != "node" && pos[0] != "nodes" && pos[0] != "no") {
		fmt.Fprintln(c.stderr, "error: usage: "+usage)
		return nil, errUsage
	}
	n, err := c.currentNode(ctx, pos[1])
	if err != nil {
		return nil, err
	}
	e := &nodeEdit{name: pos[1], node: n, labels: map[string]string{}, edits: pos[2:]}
	for k, v := range n.Labels {
		if !wellKnown[k] {
			e.labels[k] = v
		}
	}
	return e, nil
}

// label changes a node's labels as kubectl label does: k=v sets, k-
// removes. Fleet pods are placed again on that node.
func (c *cli) label(ctx context.Context, args []string) error {
	fs := c.flags("label")
	overwrite := fs.Bool("overwrite", false, "allow changing the value of an existing label")
	e, err := c.nodeEdit(ctx, fs, args, "label node NAME KEY=VALUE... | KEY-...")
	if err != nil {
		return err
	}
	labels := e.labels
	for _, arg := range e.edits {
		if k, ok := strings.CutSuffix(arg, "-"); ok && !strings.Contains(arg, "=") {
			delete(labels, k)
			continue
		}
		k, v, ok := strings.Cut(arg, "=")
		if !ok {
			return fmt.Errorf("%q: want KEY=VALUE or KEY-", arg)
		}
		if old, exists := labels[k]; exists && old != v && !*overwrite {
			return fmt.Errorf("node %s already has label %s=%s: give --overwrite to change it", e.name, k, old)
		}
		labels[k] = v
	}
	return c.setPlacement(ctx, e.name, labels, e.node.Spec.Taints, "labeled")
}

// taint changes a node's taints as kubectl taint does: key[=value]:Effect
// adds, key[:Effect]- removes. NoExecute evicts the fleet pods that do
// not tolerate it.
func (c *cli) taint(ctx context.Context, args []string) error {
	fs := c.flags("taint")
	e, err := c.nodeEdit(ctx, fs, args, "taint node NAME KEY[=VALUE]:EFFECT... | KEY[:EFFECT]-...")
	if err != nil {
		return err
	}
	taints := append([]v1.Taint(nil), e.node.Spec.Taints...)
	for _, arg := range e.edits {
		if spec, ok := strings.CutSuffix(arg, "-"); ok {
			key, effect, _ := strings.Cut(spec, ":")
			kept := taints[:0]
			for _, t := range taints {
				if t.Key == key && (effect == "" || string(t.Effect) == effect) {
					continue
				}
				kept = append(kept, t)
			}
			taints = kept
			continue
		}
		kv, effect, ok := strings.Cut(arg, ":")
		if !ok {
			return fmt.Errorf("%q: want KEY[=VALUE]:EFFECT or KEY[:EFFECT]-", arg)
		}
		key, value, _ := strings.Cut(kv, "=")
		replaced := false
		for i := range taints {
			if taints[i].Key == key && string(taints[i].Effect) == effect {
				taints[i].Value, replaced = value, true
			}
		}
		if !replaced {
			taints = append(taints, v1.Taint{Key: key, Value: value, Effect: v1.TaintEffect(effect)})
		}
	}
	sort.SliceStable(taints, func(i, j int) bool { return taints[i].Key < taints[j].Key })
	return c.setPlacement(ctx, e.name, e.labels, taints, "tainted")
}

func (c *cli) setPlacement(ctx context.Context, node string, labels map[string]string, taints []v1.Taint, verb string) error {
	cn, err := c.connect(ctx)
	if err != nil {
		return err
	}
	if _, err := cn.client.SetPlacement(ctx, node, wire.PlacementRequest{Labels: labels, Taints: taints}); err != nil {
		return err
	}
	fmt.Fprintf(c.stdout, "node/%s %s\n", node, verb)
	return nil
}
