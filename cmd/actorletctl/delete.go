package main

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"strings"

	"github.com/nats-io/nats.go/jetstream"
	v1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"

	"github.com/actorlet/actorlet/messages/wire"
)

func (c *cli) delete(ctx context.Context, args []string) error {
	fs := c.flags("delete")
	ns := fs.String("n", "default", "namespace")
	grace := fs.Int64("grace-period", -1, "seconds to let the pod terminate (-1: the pod's own; 0: at once)")
	now := fs.Bool("now", false, "delete at once (same as --grace-period 0)")
	node := fs.String("node", "", "the node the pod was applied to")
	fleet := fs.Bool("selector", false, "the pod is a fleet pod (applied with --selector)")
	pos, _, err := parse(fs, args)
	if err != nil {
		return err
	}
	if kind, ok := objectKind(first(pos)); ok && len(pos) == 2 {
		return c.deleteObject(ctx, kind, *ns, pos[1], *node)
	}
	if len(pos) != 2 || (pos[0] != "pod" && pos[0] != "pods" && pos[0] != "po") {
		fmt.Fprintln(c.stderr, "error: usage: delete pod|configmap|secret NAME")
		fs.Usage()
		return errUsage
	}
	name := pos[1]
	if *grace < -1 {
		return fmt.Errorf("--grace-period %d: must be -1 (the pod's own), 0 or positive", *grace)
	}
	if *node != "" && *fleet {
		return errors.New("--node and --selector are mutually exclusive")
	}
	kv, err := c.bucket(ctx, wire.DesiredBucket)
	if err != nil {
		return err
	}
	qctx, cancel := context.WithTimeout(ctx, c.g.timeout)
	defer cancel()
	key, err := desiredKey(qctx, kv, *ns, name, *node, *fleet)
	if err != nil {
		return err
	}
	if *now || *grace == 0 {
		if err := kv.Delete(qctx, key); err != nil {
			return fmt.Errorf("delete %s key %q: %w", wire.DesiredBucket, key, err)
		}
		fmt.Fprintf(c.stdout, "pod %q deleted (immediately)\n", name)
		return nil
	}
	e, err := kv.Get(qctx, key)
	if err != nil {
		return fmt.Errorf("read %s key %q: %w", wire.DesiredBucket, key, err)
	}
	var pod v1.Pod
	if err := decodeEntry(e, &pod); err != nil {
		return err
	}
	if pod.DeletionTimestamp == nil {
		ts := metav1.NewTime(c.clock.Now().UTC())
		pod.DeletionTimestamp = &ts
	}
	g := *grace
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
		return fmt.Errorf("encode pod: %w", err)
	}
	if _, err := kv.Update(qctx, key, data, e.Revision()); err != nil {
		return fmt.Errorf("mark pod %s/%s for deletion (it changed meanwhile? try again): %w", *ns, name, err)
	}
	fmt.Fprintf(c.stdout, "pod %q deleted (grace period %ds)\n", name, *pod.DeletionGracePeriodSeconds)
	return nil
}

// desiredKey finds the DesiredBucket key of a pod: the node's key, the
// fleet key, or whichever single one exists.
func desiredKey(ctx context.Context, kv jetstream.KeyValue, ns, name, node string, fleet bool) (string, error) {
	exists := func(key string) (bool, error) {
		_, err := kv.Get(ctx, key)
		if errors.Is(err, jetstream.ErrKeyNotFound) {
			return false, nil
		}
		if err != nil {
			return false, fmt.Errorf("read %s key %q: %w", wire.DesiredBucket, key, err)
		}
		return true, nil
	}
	var candidates []string
	switch {
	case node != "":
		candidates = []string{wire.DesiredNodeKey(node, ns, name)}
	case fleet:
		candidates = []string{wire.DesiredFleetKey(ns, name)}
	default:
		found, _, err := entries(ctx, kv, "node.*."+wire.EncodeName(ns)+"."+wire.EncodeName(name), false)
		if err != nil {
			return "", err
		}
		for _, e := range found {
			candidates = append(candidates, e.Key())
		}
		candidates = append(candidates, wire.DesiredFleetKey(ns, name))
	}
	var keys []string
	for _, k := range candidates {
		ok, err := exists(k)
		if err != nil {
			return "", err
		}
		if ok {
			keys = append(keys, k)
		}
	}
	switch len(keys) {
	case 1:
		return keys[0], nil
	case 0:
		return "", fmt.Errorf("pod %s/%s not found in %s", ns, name, wire.DesiredBucket)
	}
	return "", fmt.Errorf("pod %s/%s is applied more than once (%s): choose with --node N or --selector", ns, name, strings.Join(keys, ", "))
}

func first(s []string) string {
	if len(s) == 0 {
		return ""
	}
	return s[0]
}
