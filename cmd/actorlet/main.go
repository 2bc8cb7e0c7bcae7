// Command actorlet is the node agent: it runs the pods that its sources
// (NATS and a static manifest directory) ask for, through a CRI runtime,
// as a tree of actors. `actorlet runtime` runs only the embedded process
// runtime, a CRI server any CRI client can use.
package main

import (
	"context"
	"errors"
	"flag"
	"fmt"
	"os"
	"os/signal"
	"path/filepath"
	"strings"
	"syscall"

	"k8s.io/klog/v2"

	"github.com/actorlet/actorlet/cri/procruntime"
	"github.com/actorlet/actorlet/node/agent"
)

func main() {
	// Containers of the embedded runtime run under a shim that is this
	// binary re-executed: it must take over before anything else runs.
	procruntime.MaybeRunShim()
	os.Exit(realMain(os.Args[1:]))
}

func realMain(args []string) int {
	ctx, stop := signal.NotifyContext(context.Background(), syscall.SIGINT, syscall.SIGTERM)
	defer stop()
	defer klog.Flush()
	var err error
	if len(args) > 0 && args[0] == "runtime" {
		err = runRuntime(ctx, args[1:])
	} else if len(args) > 0 && args[0] == "running" {
		return runRunning(args[1:], os.Stdout, os.Stderr)
	} else if len(args) > 0 && args[0] == "version" {
		fmt.Println("actorlet", agent.Version)
		return 0
	} else {
		var cfg agent.Config
		cfg, err = agent.ParseFlags(args)
		if err == nil {
			err = agent.Run(ctx, cfg)
		}
	}
	switch {
	case errors.Is(err, flag.ErrHelp):
		return 0
	case err != nil:
		fmt.Fprintln(os.Stderr, "actorlet:", err)
		return 1
	}
	return 0
}

// runRuntime serves the embedded process runtime alone until ctx ends.
func runRuntime(ctx context.Context, args []string) error {
	fs := flag.NewFlagSet("actorlet runtime", flag.ContinueOnError)
	listen := fs.String("listen", "unix:///var/lib/actorlet/runtime/cri.sock", "unix socket to serve CRI v1 on")
	root := fs.String("root-dir", "/var/lib/actorlet/runtime", "state directory of sandboxes, containers and images")
	hostIP := fs.String("host-ip", "", "IP reported for every sandbox (default: the node's first non-loopback IPv4 address)")
	isolation := fs.String("isolation", "auto", "isolation of containers: auto (everything root can have: per-pod namespaces, per-container cgroups and filesystem views), none, or a list of namespaces, cgroups, filesystem")
	hostFS := fs.Bool("host-filesystem", false, "without filesystem views (not root, or --isolation without filesystem): run containers on the host's filesystem with their mounts left at their host paths, instead of refusing a container whose mounts need a view")
	hide := fs.String("hide-paths", "", "host directories, comma-separated, covered by an empty read-only tmpfs in every filesystem view besides --root-dir (e.g. the agent's --root-dir: other pods' volumes, credentials)")
	socketGroup := fs.String("socket-group", "", "group (name or GID) that owns the CRI socket, then 0660; without it the socket is 0600 (its clients can run anything as this user)")
	streamAddr := fs.String("streaming-address", "127.0.0.1:0", "host:port of the CRI streaming server (exec, attach, port-forward); unauthenticated, keep it on the loopback")
	klogFlags := flag.NewFlagSet("klog", flag.ContinueOnError)
	klog.InitFlags(klogFlags)
	fs.Var(klogFlags.Lookup("v").Value, "v", "log verbosity (klog)")
	if err := fs.Parse(args); err != nil {
		return err
	}
	iso, err := procruntime.ParseIsolation(*isolation)
	if err != nil {
		return fmt.Errorf("--isolation: %w", err)
	}
	var hidden []string
	for _, p := range strings.Split(*hide, ",") {
		if p = strings.TrimSpace(p); p != "" {
			if !filepath.IsAbs(p) {
				return fmt.Errorf("--hide-paths: %q: must be absolute", p)
			}
			hidden = append(hidden, p)
		}
	}
	rt, err := procruntime.Start(procruntime.Options{RootDir: *root, HostIP: *hostIP, StreamAddress: *streamAddr, Isolation: iso, HostFilesystem: *hostFS, HidePaths: hidden, SocketGroup: *socketGroup}, *listen)
	if err != nil {
		return err
	}
	klog.InfoS("Process runtime serving CRI v1", "endpoint", *listen, "rootDir", *root, "streamingAddress", rt.StreamAddress(), "isolation", iso)
	<-ctx.Done()
	rt.Stop() // containers keep running; a new runtime on the same root adopts them
	return nil
}
