package main

import (
	"context"
	"errors"
	"flag"
	"fmt"
	"net"
	"os"
	"os/signal"
	"strconv"
	"strings"
	"sync"
	"syscall"

	"golang.org/x/term"
	v1 "k8s.io/api/core/v1"

	"github.com/actorlet/actorlet/messages/wire"
)

// expandShortFlags turns kubectl's combined "-it" / "-ti" into "-i -t"
// (Go's flag package knows no combined short flags). Nothing after "--" is
// touched.
func expandShortFlags(args []string) []string {
	out := make([]string, 0, len(args)+1)
	for i, a := range args {
		if a == "--" {
			return append(out, args[i:]...)
		}
		if a == "-it" || a == "-ti" {
			out = append(out, "-i", "-t")
			continue
		}
		out = append(out, a)
	}
	return out
}

// terminal is the local side of a tty session: raw mode and resizes.
type terminal struct {
	fd      int
	state   *term.State
	sizes   chan wire.TerminalSize
	stopSig func()
}

// ttyFd returns the descriptor of stdin when it is a terminal.
func (c *cli) ttyFd() (int, bool) {
	f, ok := c.stdin.(*os.File)
	if !ok || !term.IsTerminal(int(f.Fd())) {
		return 0, false
	}
	return int(f.Fd()), true
}

// startTerminal puts the terminal in raw mode (keys, Ctrl-C included, go
// to the remote) and reports its size now and on every SIGWINCH.
func startTerminal(fd int) (*terminal, error) {
	t := &terminal{fd: fd, sizes: make(chan wire.TerminalSize, 1)}
	st, err := term.MakeRaw(fd)
	if err != nil {
		return nil, fmt.Errorf("raw mode on the terminal: %w", err)
	}
	t.state = st
	winch := make(chan os.Signal, 1)
	signal.Notify(winch, syscall.SIGWINCH)
	done := make(chan struct{})
	var once sync.Once
	t.stopSig = func() {
		once.Do(func() {
			signal.Stop(winch)
			close(done)
		})
	}
	go func() {
		for {
			select {
			case <-done:
				return
			case <-winch:
				if w, h, err := term.GetSize(fd); err == nil {
					select { // latest size wins
					case <-t.sizes:
					default:
					}
					t.sizes <- wire.TerminalSize{Width: uint16(w), Height: uint16(h)}
				}
			}
		}
	}()
	return t, nil
}

func (t *terminal) restore() {
	t.stopSig()
	_ = term.Restore(t.fd, t.state)
}

// interactive runs an exec -i/-t or attach session to its end and turns
// that end into the command's result: the remote exit code becomes ours.
func (c *cli) interactive(ctx context.Context, node, verb string, client *wire.Client, req wire.SessionRequest) error {
	fd, isTerm := c.ttyFd()
	if req.TTY && !isTerm {
		fmt.Fprintln(c.stderr, "Unable to use a TTY - input is not a terminal or the right kind of file")
		req.TTY = false
	}
	if req.TTY {
		if w, h, err := term.GetSize(fd); err == nil {
			req.Width, req.Height = uint16(w), uint16(h)
		}
	}
	sess, err := client.OpenSession(ctx, node, verb, req)
	if err != nil {
		return err
	}
	opts := wire.StreamOptions{Stdout: c.stdout, Stderr: c.stderr}
	if req.Stdin {
		opts.Stdin = c.stdin
	}
	var t *terminal
	if req.TTY {
		if t, err = startTerminal(fd); err != nil {
			sess.Close()
			return err
		}
		opts.Resize = t.sizes
	}
	end, err := sess.Run(ctx, opts)
	if t != nil {
		t.restore()
		if req.Stdin {
			fmt.Fprint(c.stderr, "\r") // the remote's last line may lack a carriage return
		}
	}
	switch {
	case err != nil && ctx.Err() != nil:
		return exitCodeError{code: 130} // interrupted: the session is closed, the node stops the stream
	case err != nil:
		return err
	case end.Reason == wire.SessionEndError:
		return errors.New(end.Error)
	case end.Reason != wire.SessionEndExited:
		return fmt.Errorf("session closed by node %q: %s", node, end.Reason)
	case end.ExitCode != 0:
		return exitCodeError{code: end.ExitCode}
	}
	return nil
}

// stdioFlags declares -i/--stdin and -t/--tty, as kubectl has them.
func stdioFlags(fs *flag.FlagSet, stdinHelp, ttyHelp string) (stdin, tty *bool) {
	stdin = fs.Bool("i", false, stdinHelp)
	fs.BoolVar(stdin, "stdin", false, "same as -i")
	tty = fs.Bool("t", false, ttyHelp)
	fs.BoolVar(tty, "tty", false, "same as -t")
	return stdin, tty
}

func (c *cli) attach(ctx context.Context, args []string) error {
	fs := c.flags("attach")
	ns, node := podFlags(fs)
	container := fs.String("c", "", "container (default: the pod's only container)")
	stdin, tty := stdioFlags(fs, "send stdin to the container (it must have stdin: true)", "stdin is a TTY (the container must have tty: true)")
	name, _, err := podArg(fs, expandShortFlags(args))
	if err != nil {
		return err
	}
	n, client, err := c.target(ctx, *ns, name, *node)
	if err != nil {
		return err
	}
	return c.interactive(ctx, n, wire.VerbStreamAttach, client, wire.SessionRequest{
		Namespace: *ns, Name: name, Container: *container, Stdin: *stdin, TTY: *tty,
	})
}

// forwardedPort is one LOCAL:REMOTE pair of port-forward.
type forwardedPort struct {
	local, remote int
}

func parsePortPair(s string) (forwardedPort, error) {
	localStr, remoteStr, pair := strings.Cut(s, ":")
	if !pair {
		remoteStr = localStr
	}
	remote, err := strconv.Atoi(remoteStr)
	if err != nil || remote < 1 || remote > 65535 {
		return forwardedPort{}, fmt.Errorf("port %q: the remote port must be 1-65535", s)
	}
	local := remote
	if pair {
		if localStr == "" {
			local = 0 // a free port, as kubectl's ":80"
		} else if local, err = strconv.Atoi(localStr); err != nil || local < 0 || local > 65535 {
			return forwardedPort{}, fmt.Errorf("port %q: the local port must be 0-65535", s)
		}
	}
	return forwardedPort{local: local, remote: remote}, nil
}

func (c *cli) portForward(ctx context.Context, args []string) error {
	fs := c.flags("port-forward")
	ns, node := podFlags(fs)
	address := fs.String("address", "127.0.0.1", "local address to listen on")
	pos, _, err := parse(fs, args)
	if err != nil {
		return err
	}
	if len(pos) < 2 {
		fmt.Fprintln(c.stderr, "error: give the pod and at least one port: port-forward POD [LOCAL:]REMOTE...")
		return errUsage
	}
	name := pos[0]
	var ports []forwardedPort
	for _, p := range pos[1:] {
		fp, err := parsePortPair(p)
		if err != nil {
			return err
		}
		ports = append(ports, fp)
	}
	n, client, err := c.target(ctx, *ns, name, *node)
	if err != nil {
		return err
	}
	pod, err := client.GetPod(ctx, n, *ns, name)
	if err != nil {
		return err
	}
	if pod.Status.Phase != v1.PodRunning {
		return fmt.Errorf("unable to forward port because pod is not running. Current status=%s", pod.Status.Phase)
	}
	ctx, cancel := context.WithCancel(ctx)
	defer cancel()
	var listeners []net.Listener
	defer func() {
		for _, l := range listeners {
			_ = l.Close()
		}
	}()
	for _, p := range ports {
		l, err := net.Listen("tcp", net.JoinHostPort(*address, strconv.Itoa(p.local)))
		if err != nil {
			return fmt.Errorf("listen for port %d: %w", p.remote, err)
		}
		listeners = append(listeners, l)
		fmt.Fprintf(c.stdout, "Forwarding from %s -> %d\n", l.Addr(), p.remote)
	}
	var wg sync.WaitGroup
	defer wg.Wait()
	for i, l := range listeners {
		wg.Add(1)
		go func() {
			defer wg.Done()
			c.acceptForward(ctx, &wg, l, n, client, *ns, name, ports[i].remote)
		}()
	}
	<-ctx.Done()
	return nil
}

// acceptForward carries every connection to l into its own port-forward
// session until ctx ends.
func (c *cli) acceptForward(ctx context.Context, wg *sync.WaitGroup, l net.Listener, node string, client *wire.Client, ns, name string, remote int) {
	stop := context.AfterFunc(ctx, func() { _ = l.Close() })
	defer stop()
	local := l.Addr().(*net.TCPAddr).Port
	for {
		conn, err := l.Accept()
		if err != nil {
			return
		}
		fmt.Fprintf(c.stdout, "Handling connection for %d\n", local)
		wg.Add(1)
		go func() {
			defer wg.Done()
			defer conn.Close()
			closeConn := context.AfterFunc(ctx, func() { _ = conn.Close() })
			defer closeConn()
			sess, err := client.OpenSession(ctx, node, wire.VerbStreamPortForward, wire.SessionRequest{Namespace: ns, Name: name, Port: int32(remote)})
			if err != nil {
				fmt.Fprintf(c.stderr, "error: forward %d -> %d: %v\n", local, remote, err)
				return
			}
			end, err := sess.Run(ctx, wire.StreamOptions{Stdin: conn, Stdout: conn})
			switch {
			case err != nil && ctx.Err() == nil:
				fmt.Fprintf(c.stderr, "error: forward %d -> %d: %v\n", local, remote, err)
			case err == nil && end.Reason == wire.SessionEndError:
				fmt.Fprintf(c.stderr, "error: forward %d -> %d: %s\n", local, remote, end.Error)
			}
		}()
	}
}
