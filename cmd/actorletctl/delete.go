package main

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"strings"
	"time"

	"github.com/nats-io/nats.go/jetstream"
	v1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"

	"github.com/actorlet/actorlet/messages/wire"
)

// deleteOpts are delete's flags about pods.
type deleteOpts struct {
	node  string
	fleet bool
	grace int64
	now   bool
}

func (c *cli) delete(ctx context.Context, args []string) error {
	fs := c.flags("delete")
	ns := fs.String("n", "default", "namespace")
	var files stringList
	fs.Var(&files, "f", "delete every pod, ConfigMap and Secret of this file, directory or - (stdin), as kubectl delete -f; repeatable")
	grace := fs.Int64("grace-period", -1, "seconds to let the pod terminate (-1: the pod's own; 0: at once)")
	now := fs.Bool("now", false, "delete at once (same as --grace-period 0)")
	node := fs.String("node", "", "the node the pod was applied to")
	fleet := fs.Bool("selector", false, "the pod is a fleet pod (applied with --selector)")
	wait := fs.Bool("wait", false, "wait until the deleted pods are gone from their nodes, printing their progress")
	waitTimeout := fs.Duration("wait-timeout", 5*time.Minute, "how long --wait waits")
	pos, _, err := parse(fs, args)
	if err != nil {
		return err
	}
	if *grace < -1 {
		return fmt.Errorf("--grace-period %d: must be -1 (the pod's own), 0 or positive", *grace)
	}
	if *node != "" && *fleet {
		return errors.New("--node and --selector are mutually exclusive")
	}
	var targets []deleteTarget
	switch {
	case len(files) > 0 && len(pos) > 0:
		fmt.Fprintln(c.stderr, "error: give either -f FILE or RESOURCE NAME..., not both")
		fs.Usage()
		return errUsage
	case len(files) > 0:
		if targets, err = c.fileTargets(files, *ns); err != nil {
			return err
		}
	default:
		if targets, err = argTargets(pos, *ns); err != nil {
			fmt.Fprintf(c.stderr, "error: %v\n", err)
			fs.Usage()
			return errUsage
		}
	}
	opts := deleteOpts{node: *node, fleet: *fleet, grace: *grace, now: *now}
	var deleted []applied
	failed := 0
	for _, t := range targets {
		var err error
		switch {
		case t.err != nil:
			err = t.err
		case t.kind == "Pod":
			var d applied
			if d, err = c.deletePod(ctx, t.namespace, t.name, opts); err == nil {
				deleted = append(deleted, d)
			}
		default:
			err = c.deleteObject(ctx, t.kind, t.namespace, t.name, *node)
		}
		if err != nil {
			if len(targets) == 1 {
				return err
			}
			fmt.Fprintf(c.stderr, "error: %s: %v\n", t.source, err)
			failed++
		}
	}
	if *wait {
		wctx, cancel := context.WithTimeout(ctx, *waitTimeout)
		defer cancel()
		if err := c.waitDeleted(wctx, deleted); err != nil {
			return err
		}
	}
	if failed > 0 {
		return fmt.Errorf("%d of %d objects not deleted", failed, len(targets))
	}
	return nil
}

// deletePod marks a pod for deletion (or removes it at once) and returns
// it for --wait.
func (c *cli) deletePod(ctx context.Context, ns, name string, o deleteOpts) (applied, error) {
	kv, err := c.bucket(ctx, wire.DesiredBucket)
	if err != nil {
		return applied{}, err
	}
	qctx, cancel := context.WithTimeout(ctx, c.g.timeout)
	defer cancel()
	key, err := c.desiredKey(qctx, kv, ns, name, o.node, o.fleet)
	if errors.Is(err, errPodNotFound) {
		return applied{}, c.notFoundHint(qctx, ns, name, err)
	}
	if err != nil {
		return applied{}, err
	}
	e, err := kv.Get(qctx, key)
	if err != nil {
		return applied{}, fmt.Errorf("read %s key %q: %w", wire.DesiredBucket, key, err)
	}
	var pod v1.Pod
	if err := decodeEntry(e, &pod); err != nil {
		return applied{}, err
	}
	gone := applied{pod: &v1.Pod{ObjectMeta: metav1.ObjectMeta{Namespace: ns, Name: name, UID: pod.UID}}}
	if k, err := wire.ParseDesiredKey(key); err == nil && !k.Fleet {
		gone.node = k.Node
	}
	if o.now || o.grace == 0 {
		if err := kv.Delete(qctx, key); err != nil {
			return applied{}, fmt.Errorf("delete %s key %q: %w", wire.DesiredBucket, key, err)
		}
		fmt.Fprintf(c.stdout, "pod %q deleted (immediately)\n", name)
		return gone, nil
	}
	if pod.DeletionTimestamp == nil {
		ts := metav1.NewTime(c.clock.Now().UTC())
		pod.DeletionTimestamp = &ts
	}
	g := o.grace
	if g < 0 {
		g = 30
		if pod.Spec.TerminationGracePeriodSeconds != nil {
			g = *pod.Spec.TerminationGracePeriodSeconds
		}
	}
	// Like the API server, a deletion can shorten the grace period, never
	// lengthen it.
	if pod.DeletionGracePeriodSeconds == nil || g < *pod.DeletionGracePeriodSeconds {
		pod.DeletionGracePeriodSeconds = &g
	}
	data, err := json.Marshal(&pod)
	if err != nil {
		return applied{}, fmt.Errorf("encode pod: %w", err)
	}
	if _, err := kv.Update(qctx, key, data, e.Revision()); err != nil {
		return applied{}, fmt.Errorf("mark pod %s/%s for deletion (it changed meanwhile? try again): %w", ns, name, err)
	}
	fmt.Fprintf(c.stdout, "pod %q deleted (grace period %ds)\n", name, *pod.DeletionGracePeriodSeconds)
	return gone, nil
}

// desiredSearchTimeout bounds the search of a pod's desired keys beyond
// the nodes known to the bus.
const desiredSearchTimeout = 2 * time.Second

// candidateNodes is every node a pod's desired key may name: the nodes
// registered on the bus and those reporting a status of the pod (both
// readable by any operator, unlike a watch of the desired keys).
func (c *cli) candidateNodes(ctx context.Context, ns, name string) ([]string, error) {
	registered, err := c.all(ctx, wire.NodesBucket)
	if err != nil {
		return nil, err
	}
	seen := map[string]bool{}
	var nodes []string
	add := func(n string) {
		if !seen[n] {
			seen[n] = true
			nodes = append(nodes, n)
		}
	}
	for _, e := range registered {
		add(wire.DecodeName(e.Key()))
	}
	kv, err := c.bucket(ctx, wire.StatusBucket)
	if err != nil {
		return nil, err
	}
	qctx, cancel := context.WithTimeout(ctx, c.g.timeout)
	defer cancel()
	reporting, _, err := entries(qctx, kv, "*."+wire.EncodeName(ns)+"."+wire.EncodeName(name), false)
	if err != nil {
		return nil, err
	}
	for _, e := range reporting {
		add(wire.DecodeName(firstToken(e.Key())))
	}
	return nodes, nil
}

// errPodNotFound: no desired entry holds the pod.
var errPodNotFound = errors.New("no such pod was applied")

// desiredKey finds the DesiredBucket key of a pod: the node's key, the
// fleet key, or whichever single one exists.
func (c *cli) desiredKey(ctx context.Context, kv jetstream.KeyValue, ns, name, node string, fleet bool) (string, error) {
	// existing is the keys of candidates that exist, each read once.
	existing := func(candidates []string) ([]string, error) {
		var keys []string
		for _, key := range candidates {
			_, err := kv.Get(ctx, key)
			if errors.Is(err, jetstream.ErrKeyNotFound) {
				continue
			}
			if err != nil {
				return nil, fmt.Errorf("read %s key %q: %w", wire.DesiredBucket, key, err)
			}
			keys = append(keys, key)
		}
		return keys, nil
	}
	var keys []string
	var err error
	switch {
	case node != "":
		keys, err = existing([]string{wire.DesiredNodeKey(node, ns, name)})
	case fleet:
		keys, err = existing([]string{wire.DesiredFleetKey(ns, name)})
	default:
		var nodes []string
		if nodes, err = c.candidateNodes(ctx, ns, name); err != nil {
			return "", err
		}
		candidates := []string{wire.DesiredFleetKey(ns, name)}
		for _, n := range nodes {
			candidates = append(candidates, wire.DesiredNodeKey(n, ns, name))
		}
		if keys, err = existing(candidates); err == nil && len(keys) == 0 {
			// A pod applied for a node not registered yet: only a watch
			// of the desired keys finds it, which an operator scoped to
			// a namespace may not make (direct reads only), so bounded.
			wctx, cancel := context.WithTimeout(ctx, desiredSearchTimeout)
			es, _, _ := entries(wctx, kv, "node.*."+wire.EncodeName(ns)+"."+wire.EncodeName(name), false)
			cancel()
			for _, e := range es {
				keys = append(keys, e.Key())
			}
		}
	}
	if err != nil {
		return "", err
	}
	switch len(keys) {
	case 1:
		return keys[0], nil
	case 0:
		return "", fmt.Errorf("pod %s/%s not found in %s: %w", ns, name, wire.DesiredBucket, errPodNotFound)
	}
	return "", fmt.Errorf("pod %s/%s is applied more than once (%s): choose with --node N or --selector", ns, name, strings.Join(keys, ", "))
}
