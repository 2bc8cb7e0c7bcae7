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
)

// waitRunning watches the StatusBucket until every applied pod is running
// or one failed, printing a line whenever a pod's progress changes.
func (c *cli) waitRunning(ctx context.Context, pods []applied) error {
	if len(pods) == 0 {
		return nil
	}
	kv, err := c.bucket(ctx, wire.StatusBucket)
	if err != nil {
		return err
	}
	w, err := kv.WatchAll(ctx)
	if err != nil {
		return fmt.Errorf("watch %s: %w", wire.StatusBucket, err)
	}
	defer func() { _ = w.Stop() }()

	// statuses[i] maps a status key to the latest status of pods[i] there.
	statuses := make([]map[string]*v1.Pod, len(pods))
	for i := range statuses {
		statuses[i] = map[string]*v1.Pod{}
	}
	last := make([]string, len(pods))
	for {
		select {
		case <-ctx.Done():
			var pending []string
			for i, a := range pods {
				if o, _ := c.outcome(statuses[i]); o != "running" {
					pending = append(pending, a.pod.Name)
				}
			}
			if errors.Is(ctx.Err(), context.DeadlineExceeded) {
				return fmt.Errorf("timed out waiting for pods to run: %s", strings.Join(pending, ", "))
			}
			return ctx.Err()
		case e := <-w.Updates():
			if e != nil {
				c.record(pods, statuses, e.Key(), e.Value())
			}
		}
		running, failed := 0, []string{}
		for i, a := range pods {
			o, why := c.outcome(statuses[i])
			line := progressLine(a, statuses[i], o, why)
			if line != last[i] {
				fmt.Fprintln(c.stdout, line)
				last[i] = line
			}
			switch o {
			case "running":
				running++
			case "failed":
				failed = append(failed, fmt.Sprintf("pod/%s: %s", a.pod.Name, why))
			}
		}
		if len(failed) > 0 {
			return fmt.Errorf("pods failed to start: %s", strings.Join(failed, "; "))
		}
		if running == len(pods) {
			return nil
		}
	}
}

// record keeps a status if it belongs to one of the applied pods (same
// UID: older statuses of a replaced pod are ignored).
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
		if err := json.Unmarshal(value, &p); err != nil || p.UID != a.pod.UID {
			return
		}
		statuses[i][key] = &p
	}
}

// outcome combines a pod's statuses on its nodes: running when every node
// runs it, failed when one failed.
func (c *cli) outcome(byNode map[string]*v1.Pod) (string, string) {
	if len(byNode) == 0 {
		return "", ""
	}
	running := 0
	for _, p := range byNode {
		o, why := podOutcome(p)
		if o == "failed" {
			return o, why
		}
		if o == "running" {
			running++
		}
	}
	if running == len(byNode) {
		return "running", "Running"
	}
	return "", ""
}

func progressLine(a applied, byNode map[string]*v1.Pod, outcome, why string) string {
	if len(byNode) == 0 {
		return fmt.Sprintf("pod/%s: waiting for a node to report status", a.pod.Name)
	}
	var parts []string
	for key, p := range byNode {
		s := fmt.Sprintf("%s on %s", podReason(p), wire.DecodeName(firstToken(key)))
		if r := waitingReasons(p); r != "" {
			s += " [" + r + "]"
		}
		parts = append(parts, s)
	}
	sort.Strings(parts)
	line := fmt.Sprintf("pod/%s: %s", a.pod.Name, strings.Join(parts, "; "))
	switch outcome {
	case "running":
		line += " - ready"
	case "failed":
		line += " - failed: " + why
	}
	return line
}
