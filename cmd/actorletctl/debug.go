package main

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"strings"
	"time"

	v1 "k8s.io/api/core/v1"
	"k8s.io/apimachinery/pkg/util/rand"

	"github.com/actorlet/actorlet/messages/validation"
	"github.com/actorlet/actorlet/messages/wire"
)

// debug adds an ephemeral container to a running pod, as kubectl debug
// does: it is written into the desired pod (never restarted, removed with
// the pod); its output is read with logs -c NAME.
func (c *cli) debug(ctx context.Context, args []string) error {
	fs := c.flags("debug")
	ns := fs.String("n", "default", "namespace")
	image := fs.String("image", "", "image of the debug container (required)")
	name := fs.String("c", "", "name of the debug container (default: debugger-XXXXX)")
	target := fs.String("target", "", "container whose process namespace to target (when the runtime supports it)")
	node := fs.String("node", "", "the node the pod was applied to")
	fleet := fs.Bool("selector", false, "the pod is a fleet pod (applied with --selector)")
	stdin, tty := stdioFlags(fs, "keep stdin open on the debug container and attach to it", "allocate a TTY for the debug container (with -i: an interactive shell)")
	pod, cmd, err := podArg(fs, expandShortFlags(args))
	if err != nil {
		return err
	}
	if *image == "" {
		fmt.Fprintln(c.stderr, "error: --image is required")
		return errUsage
	}
	if *name == "" {
		*name = "debugger-" + rand.String(5)
		fmt.Fprintf(c.stderr, "Defaulting debug container name to %s.\n", *name)
	}
	kv, err := c.bucket(ctx, wire.DesiredBucket)
	if err != nil {
		return err
	}
	qctx, cancel := context.WithTimeout(ctx, c.g.timeout)
	defer cancel()
	key, err := c.desiredKey(qctx, kv, *ns, pod, *node, *fleet)
	if err != nil {
		return err
	}
	e, err := kv.Get(qctx, key)
	if err != nil {
		return fmt.Errorf("read %s key %q: %w", wire.DesiredBucket, key, err)
	}
	var p v1.Pod
	if err := json.Unmarshal(e.Value(), &p); err != nil {
		return fmt.Errorf("decode pod %s/%s: %w", *ns, pod, err)
	}
	if p.DeletionTimestamp != nil {
		return fmt.Errorf("pod %s/%s is being deleted", *ns, pod)
	}
	p.Spec.EphemeralContainers = append(p.Spec.EphemeralContainers, v1.EphemeralContainer{
		EphemeralContainerCommon: v1.EphemeralContainerCommon{
			Name: *name, Image: *image, Command: cmd, ImagePullPolicy: v1.PullIfNotPresent,
			Stdin: *stdin, TTY: *tty,
			TerminationMessagePolicy: v1.TerminationMessageReadFile, TerminationMessagePath: v1.TerminationMessagePathDefault,
		},
		TargetContainerName: *target,
	})
	check := p.DeepCopy()
	validation.SetDefaults(check)
	if err := validation.ValidatePod(check); err != nil {
		return fmt.Errorf("debug container: %w", err)
	}
	// What the node's runtime cannot run fails here, at once, not after
	// a wait for a container that never starts.
	if n := c.debugNode(ctx, key, *ns, pod, *node); n != "" {
		if err := runnableOn(n, c.nodeRuntime(ctx, n), check); err != nil {
			return fmt.Errorf("debug container %s: %w", *name, err)
		}
	}
	data, err := json.Marshal(&p)
	if err != nil {
		return err
	}
	// Only if nobody changed the pod meanwhile.
	if _, err := kv.Update(qctx, key, data, e.Revision()); err != nil {
		return errors.Join(fmt.Errorf("add the debug container to pod %s/%s (changed meanwhile? try again)", *ns, pod), err)
	}
	if !*stdin && !*tty {
		fmt.Fprintf(c.stdout, "ephemeral container %s added to pod %s; its output: actorletctl logs %s -c %s -n %s\n", *name, pod, pod, *name, *ns)
		return nil
	}
	return c.attachWhenRunning(ctx, *ns, pod, *node, wire.SessionRequest{Namespace: *ns, Name: pod, Container: *name, Stdin: *stdin, TTY: *tty})
}

// debugNode is the node a debug container goes to: the desired key's, or
// for a fleet pod the one node running it ("" when unknown: the node's
// own check then refuses what it cannot run).
func (c *cli) debugNode(ctx context.Context, key, ns, pod, node string) string {
	if dk, err := wire.ParseDesiredKey(key); err == nil && !dk.Fleet {
		return dk.Node
	}
	n, err := c.podNode(ctx, ns, pod, node)
	if err != nil {
		return ""
	}
	return n
}

// debugAttachTimeout bounds the wait for a new debug container to run.
const debugAttachTimeout = 2 * time.Minute

// debugExitTimeout bounds the wait, after an attach session ended, for the
// debug container's exit code to show in the pod's status.
const debugExitTimeout = 15 * time.Second

// attachWhenRunning attaches to a container that is being created, as
// kubectl debug -it does: while the node answers that it is not created or
// not running yet, it asks again — unless the pod's status says it cannot
// start (a waiting reason other than ContainerCreating: the reason and
// message are the error, at once) or it already ended. Once the session
// ends, the container's exit code becomes ours.
func (c *cli) attachWhenRunning(ctx context.Context, ns, pod, node string, req wire.SessionRequest) error {
	deadline := time.Now().Add(debugAttachTimeout)
	last := ""
	for {
		n, client, err := c.target(ctx, ns, pod, node)
		if err == nil {
			err = c.interactive(ctx, n, wire.VerbStreamAttach, client, req)
			if err == nil {
				return c.debugExit(ctx, n, ns, pod, req.Container)
			}
		}
		var we *wire.Error
		notYet := wire.IsNotFound(err) || (errors.As(err, &we) && we.Code == wire.CodeBadRequest && strings.Contains(we.Description, "is not running"))
		if !notYet || time.Now().After(deadline) {
			return err
		}
		// Say how the container is doing, in apply --wait's style, and
		// stop at once when it cannot run.
		line, done, failed := "", false, error(nil)
		if client != nil {
			if p, gerr := client.GetPod(ctx, n, ns, pod); gerr == nil {
				line, done, failed = debugProgress(p, req.Container)
			}
		}
		if line == "" {
			line = fmt.Sprintf("pod/%s: waiting for container %s to start", pod, req.Container)
		}
		if line != last {
			fmt.Fprintln(c.stderr, line)
			last = line
		}
		if done {
			return failed
		}
		select {
		case <-ctx.Done():
			return ctx.Err()
		case <-time.After(500 * time.Millisecond):
		}
	}
}

// debugProgress is a progress line for the ephemeral container name of p;
// done when there is nothing to attach to: it cannot start (err says why)
// or it already ended (err carries its exit code).
func debugProgress(p *v1.Pod, name string) (line string, done bool, err error) {
	for _, cs := range p.Status.EphemeralContainerStatuses {
		if cs.Name != name {
			continue
		}
		switch st := cs.State; {
		case st.Waiting != nil:
			line := fmt.Sprintf("pod/%s: container %s: %s", p.Name, name, orElse(st.Waiting.Reason, "Waiting"))
			if st.Waiting.Message != "" {
				line += " (" + st.Waiting.Message + ")"
			}
			if failureReasons[st.Waiting.Reason] {
				return line, true, fmt.Errorf("debug container %s cannot start: %s: %s",
					name, st.Waiting.Reason, st.Waiting.Message)
			}
			return line, false, nil
		case st.Terminated != nil:
			// It ran and ended before the attach: nothing to attach to;
			// its exit code is ours, and its output is in its log.
			t := st.Terminated
			return fmt.Sprintf("pod/%s: container %s ended (%s, exit code %d) before it could be attached to; its output: actorletctl logs %s -c %s -n %s",
				p.Name, name, orElse(t.Reason, "Terminated"), t.ExitCode, p.Name, name, p.Namespace), true, exitCode(t.ExitCode)
		case st.Running != nil:
			return fmt.Sprintf("pod/%s: container %s: Running", p.Name, name), false, nil
		}
	}
	return "", false, nil
}

// debugExit waits (at most debugExitTimeout) for the debug container to be
// seen terminated once its attach session ended, and returns its exit code
// as ours. A container still running (the session was left) is success.
func (c *cli) debugExit(ctx context.Context, node, ns, pod, container string) error {
	deadline := time.Now().Add(debugExitTimeout)
	for {
		cs := c.ephemeralStatus(ctx, node, ns, pod, container)
		if cs != nil && cs.State.Terminated != nil {
			return exitCode(cs.State.Terminated.ExitCode)
		}
		if time.Now().After(deadline) {
			return nil
		}
		select {
		case <-ctx.Done():
			return nil
		case <-time.After(200 * time.Millisecond):
		}
	}
}

func exitCode(code int32) error {
	if code == 0 {
		return nil
	}
	return exitCodeError{code: int(code)}
}

// ephemeralStatus is the status of the pod's ephemeral container as node
// last published it, nil when unknown.
func (c *cli) ephemeralStatus(ctx context.Context, node, ns, pod, container string) *v1.ContainerStatus {
	kv, err := c.bucket(ctx, wire.StatusBucket)
	if err != nil {
		return nil
	}
	qctx, cancel := context.WithTimeout(ctx, c.g.timeout)
	defer cancel()
	e, err := kv.Get(qctx, wire.StatusKey(node, ns, pod))
	if err != nil {
		return nil
	}
	var p v1.Pod
	if json.Unmarshal(e.Value(), &p) != nil {
		return nil
	}
	for i := range p.Status.EphemeralContainerStatuses {
		if p.Status.EphemeralContainerStatuses[i].Name == container {
			return &p.Status.EphemeralContainerStatuses[i]
		}
	}
	return nil
}
