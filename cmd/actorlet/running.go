package main

import (
	"errors"
	"flag"
	"fmt"
	"io"
	"path/filepath"

	"github.com/actorlet/actorlet/cri/procruntime"
)

// runRunning is `actorlet running --root-dir DIR`: whether anything of a
// node's root directory still runs — the node itself (its embedded
// runtime answers on DIR/runtime/cri.sock) or containers whose shims are
// alive (the process runtime's state in DIR/runtime). Exit 0: nothing
// runs; 1: something does (listed, with what to do); 2: the check failed.
// make clean runs it before removing DIR: pods whose state is removed run
// on with nothing left to adopt or stop them.
func runRunning(args []string, stdout, stderr io.Writer) int {
	fs := flag.NewFlagSet("actorlet running", flag.ContinueOnError)
	fs.SetOutput(stderr)
	root := fs.String("root-dir", "/var/lib/actorlet", "the node's root directory (--root-dir of the node)")
	if err := fs.Parse(args); err != nil {
		if errors.Is(err, flag.ErrHelp) {
			return 0
		}
		return 2
	}
	if fs.NArg() > 0 {
		fmt.Fprintf(stderr, "actorlet running: unexpected arguments %v\n", fs.Args())
		return 2
	}
	rtDir := filepath.Join(*root, "runtime")
	node := procruntime.Serving(filepath.Join(rtDir, "cri.sock"))
	live, err := procruntime.LiveContainers(rtDir)
	if err != nil {
		fmt.Fprintf(stderr, "actorlet running: %v\n", err)
		return 2
	}
	if !node && len(live) == 0 {
		fmt.Fprintf(stdout, "Nothing of %s runs.\n", *root)
		return 0
	}
	if node {
		fmt.Fprintf(stdout, "The node of %s is running (its runtime answers on %s).\n", *root, filepath.Join(rtDir, "cri.sock"))
	}
	if len(live) > 0 {
		pods := map[string]bool{}
		for _, c := range live {
			pods[c.Namespace+"/"+c.Pod] = true
		}
		fmt.Fprintf(stdout, "%d containers of %d pods of %s are running:\n", len(live), len(pods), *root)
		for _, c := range live {
			fmt.Fprintf(stdout, "  pod %s/%s, container %s (shim pid %d, container %s)\n", c.Namespace, c.Pod, c.Name, c.ShimPID, c.ID)
		}
	}
	fmt.Fprintf(stdout, "Removing %s now would leave them running with nothing to adopt or stop them.\n", *root)
	if node {
		fmt.Fprintln(stdout, "Delete the pods you started (bin/actorletctl delete pod NAME, or delete -f FILE --wait; remove static pods' manifests), then stop the node (Ctrl-C), then try again.")
	} else {
		fmt.Fprintln(stdout, "Start the node again (make run) so it adopts them, delete them (bin/actorletctl delete pod NAME --wait), stop it (Ctrl-C), then try again.")
	}
	return 1
}
