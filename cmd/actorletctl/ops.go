package main

import (
	"context"
	"errors"
	"fmt"

	"github.com/actorlet/actorlet/messages/wire"
)

// target resolves a pod's node and the command client.
func (c *cli) target(ctx context.Context, ns, name, node string) (string, *wire.Client, error) {
	n, err := c.podNode(ctx, ns, name, node)
	if err != nil {
		return "", nil, err
	}
	cn, err := c.connect(ctx)
	if err != nil {
		return "", nil, err
	}
	return n, cn.client, nil
}

func (c *cli) logs(ctx context.Context, args []string) error {
	fs := c.flags("logs")
	ns, node := podFlags(fs)
	container := fs.String("c", "", "container (default: the pod's only container)")
	tail := fs.Int64("tail", -1, "log file lines from the end to show, across rotated files (-1: the whole current file)")
	follow := fs.Bool("f", false, "follow the log until the container exits or restarts")
	previous := fs.Bool("p", false, "the previous instance of the container")
	timestamps := fs.Bool("timestamps", false, "prefix each line with its timestamp")
	name, _, err := podArg(fs, args)
	if err != nil {
		return err
	}
	if *tail < -1 {
		return fmt.Errorf("--tail %d: must be -1 (all) or more", *tail)
	}
	n, client, err := c.target(ctx, *ns, name, *node)
	if err != nil {
		return err
	}
	req := wire.LogsRequest{Namespace: *ns, Name: name, Container: *container, Follow: *follow, Previous: *previous, Timestamps: *timestamps}
	if *tail >= 0 {
		req.TailLines = tail
	}
	_, err = client.Logs(ctx, n, req, c.stdout)
	return err
}

func (c *cli) exec(ctx context.Context, args []string) error {
	fs := c.flags("exec")
	ns, node := podFlags(fs)
	container := fs.String("c", "", "container (default: the pod's only container)")
	timeout := fs.Duration("exec-timeout", 0, "how long the command may run without -i/-t (default: the node's, 60s)")
	stdin, tty := stdioFlags(fs, "pass stdin to the command (an interactive session)", "run the command in a terminal; with -i, the local terminal goes raw (Ctrl-C goes to the command)")
	name, cmd, err := podArg(fs, expandShortFlags(args))
	if err != nil {
		return err
	}
	if len(cmd) == 0 {
		fmt.Fprintln(c.stderr, "error: give the command after --: exec POD -- CMD [ARG...]")
		return errUsage
	}
	n, client, err := c.target(ctx, *ns, name, *node)
	if err != nil {
		return err
	}
	if *stdin || *tty {
		return c.interactive(ctx, n, wire.VerbStreamExec, client, wire.SessionRequest{
			Namespace: *ns, Name: name, Container: *container, Command: cmd, Stdin: *stdin, TTY: *tty,
		})
	}
	resp, err := client.Exec(ctx, n, wire.ExecRequest{Namespace: *ns, Name: name, Container: *container, Command: cmd, TimeoutSeconds: int64(timeout.Seconds())})
	if err != nil {
		return err
	}
	_, _ = c.stdout.Write(resp.Stdout)
	_, _ = c.stderr.Write(resp.Stderr)
	if resp.Truncated {
		fmt.Fprintf(c.stderr, "actorletctl: the output was truncated to fit in one bus message (%d bytes of stdout, %d of stderr kept)\n", len(resp.Stdout), len(resp.Stderr))
	}
	if resp.ExitCode != 0 {
		return exitCodeError{code: resp.ExitCode}
	}
	return nil
}

func (c *cli) restart(ctx context.Context, args []string) error {
	fs := c.flags("restart")
	ns, node := podFlags(fs)
	container := fs.String("c", "", "only this container")
	name, _, err := podArg(fs, args)
	if err != nil {
		return err
	}
	n, client, err := c.target(ctx, *ns, name, *node)
	if err != nil {
		return err
	}
	msg, err := client.Restart(ctx, n, *ns, name, *container)
	if err != nil {
		return err
	}
	fmt.Fprintln(c.stdout, msg)
	return nil
}

func (c *cli) evict(ctx context.Context, args []string) error {
	fs := c.flags("evict")
	ns, node := podFlags(fs)
	grace := fs.Int64("grace-period", -1, "seconds to let the pod terminate (-1: the pod's own)")
	reason := fs.String("reason", "Evicted", "reason recorded in the pod's status")
	name, _, err := podArg(fs, args)
	if err != nil {
		return err
	}
	if *grace < -1 {
		return errors.New("--grace-period: must be -1 (the pod's own), 0 or positive")
	}
	var g *int64
	if *grace >= 0 {
		g = grace
	}
	n, client, err := c.target(ctx, *ns, name, *node)
	if err != nil {
		return err
	}
	msg, err := client.Evict(ctx, n, *ns, name, g, *reason)
	if err != nil {
		return err
	}
	fmt.Fprintln(c.stdout, msg)
	return nil
}
