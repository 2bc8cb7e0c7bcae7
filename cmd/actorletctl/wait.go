package main

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"sort"
	"strings"

	v1 "k8s.io/api/core/v1"

	"github.com/actorlet/actorlet/messages/wire"
	"github.com/nats-io/nats.go/jetstream"
)

// waitRunning watches the StatusBucket until every applied pod reached the
// state --for asks (each pod's own with --for auto: waitTarget) or one
// failed, printing a line whenever a pod's progress changes.
func (c *cli) waitRunning(ctx context.Context, pods []applied, forState string) error {
	targets := make([]string, len(pods))
	for i, a := range pods {
		targets[i] = waitTarget(a.pod, forState)
	}
	last := make([]string, len(pods))
	pending := func(i int, byNode map[string]*v1.Pod) string {
		if o, _ := c.outcome(byNode, targets[i]); o != "done" {
			return fmt.Sprintf("%s (not %s)", pods[i].pod.Name, targets[i])
		}
		return ""
	}
	return c.watchPods(ctx, pods, false, "timed out waiting for pods: %s (raise --wait-timeout, or see describe pod NAME)", pending,
		func(statuses []map[string]*v1.Pod) (bool, error) {
			done, failed := 0, []string{}
			for i, a := range pods {
				o, why := c.outcome(statuses[i], targets[i])
				c.progress(last, i, progressLine(a, statuses[i], targets[i], o, why))
				switch o {
				case "done":
					done++
				case "failed":
					failed = append(failed, fmt.Sprintf("pod/%s: %s", a.pod.Name, why))
				}
			}
			if len(failed) > 0 {
				return true, fmt.Errorf("pods failed: %s", strings.Join(failed, "; "))
			}
			return done == len(pods), nil
		})
}

// watchPods watches the StatusBucket for the statuses of pods and, after
// each change (once the watcher delivered the current values, with
// fromCurrent), calls check until it reports done or an error. When ctx
// times out, the error is timeoutFormat with the pods still pending (the
// non-empty texts pending gives).
func (c *cli) watchPods(ctx context.Context, pods []applied, fromCurrent bool, timeoutFormat string,
	pending func(i int, byNode map[string]*v1.Pod) string, check func(statuses []map[string]*v1.Pod) (bool, error)) error {
	if len(pods) == 0 {
		return nil
	}
	kv, err := c.bucket(ctx, wire.StatusBucket)
	if err != nil {
		return err
	}
	filter := watchFilter(pods)
	floor := snapshotFloor(ctx, kv, pods, filter)
	w, err := kv.Watch(ctx, filter)
	if err != nil {
		return fmt.Errorf("watch %s %q: %w", wire.StatusBucket, filter, err)
	}
	defer func() { _ = w.Stop() }()
	statuses := make([]map[string]*v1.Pod, len(pods))
	for i := range statuses {
		statuses[i] = map[string]*v1.Pod{}
	}
	current := !fromCurrent // the watcher delivered the current values
	initialDone, seen := false, uint64(0)
	for {
		select {
		case <-ctx.Done():
			var names []string
			for i := range pods {
				if p := pending(i, statuses[i]); p != "" {
					names = append(names, p)
				}
			}
			if errors.Is(ctx.Err(), context.DeadlineExceeded) {
				return fmt.Errorf(timeoutFormat, strings.Join(names, ", "))
			}
			return ctx.Err()
		case e := <-w.Updates():
			if e == nil {
				initialDone = true
			} else {
				seen = max(seen, e.Revision())
				c.record(pods, statuses, e.Key(), e.Value())
			}
		}
		current = current || initialDone && seen >= floor
		if !current {
			continue
		}
		if done, err := check(statuses); done || err != nil {
			return err
		}
	}
}

// watchFilter is the status keys a wait watches: those of the pods'
// namespace when they share one (what an operator scoped to a namespace
// may watch: docs/security.md), else every key.
func watchFilter(pods []applied) string {
	ns := pods[0].pod.Namespace
	for _, a := range pods[1:] {
		if a.pod.Namespace != ns {
			return ">"
		}
	}
	return "*." + wire.EncodeName(ns) + ".*"
}

// snapshotFloor is a revision the status watch (of filter, started after
// this) must deliver before its current values are complete: with every
// key, the last revision of the bucket's stream; with a namespace, the
// newest of the waited pods' own status keys on their nodes (a pod whose
// node is not known, a fleet pod, adds nothing). 0 when there is none or
// it cannot be read. The watcher delivers in revision order and always
// the floor's entry or a newer one of its key, so once it has sent its
// end-of-initial-values nil and an entry at or past the floor, it has
// delivered every current value up to it. The nil alone can come early
// while other writes land: the pending count a message carries, which
// the watcher's end relies on, can reach 0 and rise again
// (nats-server#4824); a delete --wait then saw its pod's status missing
// and said "gone" while the pod was still terminating.
func snapshotFloor(ctx context.Context, kv jetstream.KeyValue, pods []applied, filter string) uint64 {
	if filter == ">" {
		st, err := kv.Status(ctx)
		if err != nil {
			return 0
		}
		if bs, ok := st.(*jetstream.KeyValueBucketStatus); ok {
			return bs.StreamInfo().State.LastSeq
		}
		return 0
	}
	var floor uint64
	for _, a := range pods {
		if a.node == "" {
			continue
		}
		if e, err := kv.Get(ctx, wire.StatusKey(a.node, a.pod.Namespace, a.pod.Name)); err == nil {
			floor = max(floor, e.Revision())
		}
	}
	return floor
}

// progress prints line as pod i's progress when it differs from the last
// one printed.
func (c *cli) progress(last []string, i int, line string) {
	if line != last[i] {
		fmt.Fprintln(c.stdout, line)
		last[i] = line
	}
}

// record keeps a status if it belongs to one of the applied pods (same
// UID: older statuses of a replaced pod are ignored; a pod without a UID,
// from actorletctl wait, takes any).
func (c *cli) record(pods []applied, statuses []map[string]*v1.Pod, key string, value []byte) {
	node := wire.DecodeName(firstToken(key))
	for i, a := range pods {
		if a.node != "" && a.node != node {
			continue
		}
		if key != wire.StatusKey(node, a.pod.Namespace, a.pod.Name) {
			continue
		}
		if len(value) == 0 {
			delete(statuses[i], key)
			return
		}
		var p v1.Pod
		if err := json.Unmarshal(value, &p); err != nil || (a.pod.UID != "" && p.UID != a.pod.UID) {
			return
		}
		statuses[i][key] = &p
	}
}

// outcome combines a pod's statuses on its nodes: done when every node
// reached target, failed when one failed.
func (c *cli) outcome(byNode map[string]*v1.Pod, target string) (string, string) {
	if len(byNode) == 0 {
		return "", ""
	}
	done := 0
	for _, p := range byNode {
		o, why := podOutcome(p, target)
		if o == "failed" {
			return o, why
		}
		if o == "done" {
			done++
		}
	}
	if done == len(byNode) {
		return "done", target
	}
	return "", ""
}

func progressLine(a applied, byNode map[string]*v1.Pod, target, outcome, why string) string {
	if len(byNode) == 0 {
		return fmt.Sprintf("pod/%s: waiting for a node to report status", a.pod.Name)
	}
	line := fmt.Sprintf("pod/%s: %s", a.pod.Name, statusParts(byNode))
	switch outcome {
	case "done":
		line += " - " + target
	case "failed":
		line += " - failed: " + why
	}
	return line
}

// statusParts says where a pod is on each node: "Running on n1; Pending
// on n2 [app: ContainerCreating]".
func statusParts(byNode map[string]*v1.Pod) string {
	var parts []string
	for key, p := range byNode {
		s := fmt.Sprintf("%s on %s", podReason(p), wire.DecodeName(firstToken(key)))
		if r := waitingReasons(p); r != "" {
			s += " [" + r + "]"
		}
		parts = append(parts, s)
	}
	sort.Strings(parts)
	return strings.Join(parts, "; ")
}
