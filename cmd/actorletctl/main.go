// Command actorletctl is the operator's kubectl-like tool for actorlet: it
// writes desired pods to the bus, reads pod status, nodes and events from
// it, and calls a node's command service for describe, logs, exec (also
// interactive, with -it), attach, port-forward, restart and evict. See `actorletctl help` and docs/protocol.md.
package main

import (
	"context"
	"errors"
	"flag"
	"fmt"
	"io"
	"os"
	"os/signal"
	"sort"
	"strings"
	"syscall"

	"k8s.io/utils/clock"
)

func main() {
	os.Exit(run(os.Args[1:], os.Stdout, os.Stderr))
}

// run is the whole program: it returns the exit code.
func run(args []string, stdout, stderr io.Writer) int {
	ctx, stop := signal.NotifyContext(context.Background(), os.Interrupt, syscall.SIGTERM, syscall.SIGHUP)
	defer stop()
	c := &cli{stdin: os.Stdin, stdout: stdout, stderr: stderr, clock: clock.RealClock{}}
	return c.main(ctx, args)
}

// cli carries the streams, the clock and the connection of one invocation.
type cli struct {
	stdin          io.Reader
	stdout, stderr io.Writer
	clock          clock.Clock
	g              globalFlags
	conn           *conn
	refused        refusals
}

// command is one subcommand.
type command struct {
	summary string
	usage   string // after "actorletctl NAME "
	run     func(c *cli, ctx context.Context, args []string) error
}

var subcommands map[string]command

func init() {
	subcommands = map[string]command{
		"apply":        {"Create or update pods, ConfigMaps and Secrets from files", "-f FILE|DIR|- [--node N | --selector k=v,...] [--wait [--for auto|ready|running|completed] [--wait-timeout D]]", (*cli).apply},
		"delete":       {"Delete pods (gracefully, or at once with --now), ConfigMaps or Secrets, by name or from a file", "pod NAME... [-n NS] [--grace-period S] [--now] [--node N | --selector] [--wait [--wait-timeout D]]\n       actorletctl delete -f FILE|DIR|- [--now] [--wait]\n       actorletctl delete configmap|secret NAME... [-n NS] [--node N]", (*cli).delete},
		"get":          {"List or show pods, nodes, ConfigMaps or Secrets", "pods [NAME...] [-n NS | -A] [--node N] [-o wide|yaml|json] [-w]\n       actorletctl get pod/NAME [-o yaml|json]\n       actorletctl get nodes [NAME...] [-o wide|yaml|json]\n       actorletctl get configmaps|secrets [NAME...] [-n NS | -A] [--node N] [-o yaml|json]", (*cli).get},
		"wait":         {"Wait for pods to be ready, running, completed or deleted, as kubectl wait", "pod/NAME... | pod NAME... [--for ready|running|completed|delete] [-n NS] [--node N] [--wait-timeout D]", (*cli).wait},
		"describe":     {"Show a pod in detail, with its actor's state", "pod NAME [-n NS] [--node N]", (*cli).describe},
		"debug":        {"Add an ephemeral debug container to a running pod", "POD --image IMAGE [-it] [-c NAME] [--target C] [-n NS] [--node N | --selector] [-- CMD [ARG...]]", (*cli).debug},
		"label":        {"Change a node's labels (fleet pods are placed again)", "node NAME KEY=VALUE... | KEY-... [--overwrite]", (*cli).label},
		"taint":        {"Change a node's taints (NoExecute evicts fleet pods that do not tolerate it)", "node NAME KEY[=VALUE]:EFFECT... | KEY[:EFFECT]-...", (*cli).taint},
		"logs":         {"Print a container's log", "POD [-c C] [-n NS] [--tail N] [-f] [-p] [--timestamps] [--node N]", (*cli).logs},
		"exec":         {"Run a command in a container", "POD [-c C] [-n NS] [-i] [-t] [--node N] -- CMD [ARG...]", (*cli).exec},
		"attach":       {"Attach to a running container's console", "POD [-c C] [-n NS] [-i] [-t] [--node N]", (*cli).attach},
		"port-forward": {"Forward local ports to a pod", "POD [LOCAL:]REMOTE... [-n NS] [--address A] [--node N]", (*cli).portForward},
		"restart":      {"Restart a pod's containers (or one)", "POD [-c C] [-n NS] [--node N]", (*cli).restart},
		"evict":        {"Evict a pod", "POD [-n NS] [--grace-period S] [--reason R] [--node N]", (*cli).evict},
		"events":       {"List events", "[-n NS] [--node N] [-w]", (*cli).events},
		"auth": {"Create the bus authority (operator, account and system keys) for an external NATS server; issue or revoke operators scoped by namespace",
			"init [--auth-dir DIR]\n       actorletctl auth add-operator NAME [--namespace NS] [--read-only] [--auth-dir DIR] [--out FILE]\n       actorletctl auth revoke-operator NAME [--auth-dir DIR] [--sys-creds FILE]", (*cli).auth},
		"node": {"Provision a node's credentials and consumers, or revoke them live",
			"add NAME [--auth-dir DIR] [--out FILE]\n       actorletctl node add NAME --edge [--hub-domain D] [--auth-dir DIR] [--out FILE]\n       actorletctl node revoke NAME [--auth-dir DIR] [--sys-creds FILE]", (*cli).node},
		"bootstrap": {"Create the bus buckets and stream once per fleet, with replicas and placement", "[--replicas N] [--placement-cluster C] [--placement-tags t1,t2] [--edge-nodes n1,n2]", (*cli).bootstrap},
	}
}

// exitCodeError makes the program exit with a code without printing.
type exitCodeError struct{ code int }

func (e exitCodeError) Error() string { return fmt.Sprintf("exit code %d", e.code) }

func (c *cli) main(ctx context.Context, args []string) int {
	defer c.close()
	top := flag.NewFlagSet("actorletctl", flag.ContinueOnError)
	top.SetOutput(c.stderr)
	c.g.register(top)
	top.Usage = func() { c.usage(c.stderr) }
	if err := top.Parse(args); err != nil {
		if errors.Is(err, flag.ErrHelp) {
			return 0
		}
		return 2
	}
	rest := top.Args()
	if len(rest) == 0 {
		c.usage(c.stderr)
		return 2
	}
	name := rest[0]
	if name == "help" || name == "-h" || name == "--help" {
		if len(rest) > 1 {
			if cmd, ok := subcommands[rest[1]]; ok {
				c.commandUsage(c.stdout, rest[1], cmd)
				return 0
			}
		}
		c.usage(c.stdout)
		return 0
	}
	cmd, ok := subcommands[name]
	if !ok {
		fmt.Fprintf(c.stderr, "error: unknown command %q\n\n", name)
		c.usage(c.stderr)
		return 2
	}
	err := cmd.run(c, ctx, rest[1:])
	var ec exitCodeError
	switch {
	case err == nil:
		return 0
	case errors.As(err, &ec):
		return ec.code
	case errors.Is(err, flag.ErrHelp):
		return 0
	case errors.Is(err, errUsage):
		return 2
	}
	fmt.Fprintf(c.stderr, "error: %v\n", err)
	if r := c.refusal(); r != "" {
		fmt.Fprintf(c.stderr, "the bus refused this for your credentials: %s (see docs/security.md, roles)\n", r)
	}
	return 1
}

var errUsage = errors.New("usage")

func (c *cli) usage(w io.Writer) {
	fmt.Fprintf(w, "actorletctl controls actorlet nodes over NATS.\n\nUsage:\n  actorletctl [global flags] COMMAND [flags]\n\nCommands:\n")
	names := make([]string, 0, len(subcommands))
	for n := range subcommands {
		names = append(names, n)
	}
	sort.Strings(names)
	for _, n := range names {
		fmt.Fprintf(w, "  %-12s %s\n", n, subcommands[n].summary)
	}
	fmt.Fprintf(w, "  %-12s %s\n", "help", "Show help for a command (actorletctl help COMMAND, or COMMAND -h)")
	fmt.Fprintf(w, "\nGlobal flags (also accepted after the command):\n")
	fs := flag.NewFlagSet("", flag.ContinueOnError)
	fs.SetOutput(w)
	(&globalFlags{}).register(fs)
	fs.PrintDefaults()
}

func (c *cli) commandUsage(w io.Writer, name string, cmd command) {
	fmt.Fprintf(w, "%s.\n\nUsage:\n  actorletctl %s %s\n", cmd.summary, name, cmd.usage)
}

// flags returns a flag set for a command that also accepts global flags.
func (c *cli) flags(name string) *flag.FlagSet {
	fs := flag.NewFlagSet("actorletctl "+name, flag.ContinueOnError)
	fs.SetOutput(c.stderr)
	c.g.register(fs)
	fs.Usage = func() {
		c.commandUsage(c.stderr, name, subcommands[name])
		fmt.Fprintf(c.stderr, "\nFlags:\n")
		fs.PrintDefaults()
	}
	return fs
}

// parse parses args allowing flags after positional arguments (as kubectl
// does): "logs web -f" works like "logs -f web". Everything after "--" is
// returned untouched in tail.
func parse(fs *flag.FlagSet, args []string) (positional, tail []string, err error) {
	for i, a := range args {
		if a == "--" {
			tail = args[i+1:]
			args = args[:i]
			break
		}
	}
	for {
		if err := fs.Parse(args); err != nil {
			if errors.Is(err, flag.ErrHelp) {
				return nil, nil, err
			}
			return nil, nil, errUsage
		}
		rest := fs.Args()
		if len(rest) == 0 {
			return positional, tail, nil
		}
		positional = append(positional, rest[0])
		args = rest[1:]
	}
}

// oneName checks that exactly one positional argument (what) was given.
func oneName(fs *flag.FlagSet, pos []string, what string) (string, error) {
	if len(pos) != 1 || strings.TrimSpace(pos[0]) == "" {
		fmt.Fprintf(fs.Output(), "error: expected exactly one %s, got %d\n", what, len(pos))
		fs.Usage()
		return "", errUsage
	}
	return pos[0], nil
}

// podFlags declares the flags of a verb about one pod on its node: -n and
// --node.
func podFlags(fs *flag.FlagSet) (ns, node *string) {
	return fs.String("n", "default", "namespace"), fs.String("node", "", "the pod's node (default: found from its status)")
}

// podArg parses args for exactly one pod name; tail is what follows "--".
func podArg(fs *flag.FlagSet, args []string) (name string, tail []string, err error) {
	pos, tail, err := parse(fs, args)
	if err != nil {
		return "", nil, err
	}
	name, err = oneName(fs, pos, "pod name")
	return name, tail, err
}
