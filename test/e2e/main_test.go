//go:build e2e

// Package e2e is actorlet's end-to-end suite: the real actorlet and
// actorletctl binaries against the machine's real containerd (set up by
// setup.sh), driven only as an operator would, through actorletctl, the bus
// and, to check what really runs, CRI.
//
// Which containerd: ACTORLET_E2E_CONTAINERD=2 (the default: containerd 2.x
// built by setup.sh) or 1.6 (Debian's); setup.sh writes where it serves
// (test/e2eenv) and TestMain reads it.
//
// Everything a run creates lives in the namespace e2e-<runid>; cleanup deletes
// those pods through the agent, then sweeps containerd for sandboxes of that
// namespace. Nothing else on the machine is touched.
//
//	bash test/e2e/setup.sh && go test -tags e2e -count=1 -v ./test/e2e/...   (as root)
package e2e

import (
	"crypto/rand"
	"encoding/hex"
	"fmt"
	"os"
	"os/exec"
	"path/filepath"
	"testing"
	"time"

	"github.com/actorlet/actorlet/test/e2eenv"
)

const busyboxImage = "actorlet.local/busybox:e2e"

// Set by TestMain.
var (
	runID         string // unique per run
	namespace     string // e2e-<runID>: every pod of the run
	actorletBin   string
	ctlBin        string
	natsServerBin string
	ctrd          e2eenv.Containerd // the containerd setup.sh set up
	criEndpoint   string            // its CRI endpoint
)

func TestMain(m *testing.M) {
	if os.Geteuid() != 0 {
		fmt.Println("e2e: skipped, needs root (it drives the machine's containerd)")
		os.Exit(0)
	}
	os.Exit(run(m))
}

func run(m *testing.M) int {
	b := make([]byte, 3)
	if _, err := rand.Read(b); err != nil {
		fmt.Fprintln(os.Stderr, "e2e: random run id:", err)
		return 1
	}
	runID = hex.EncodeToString(b)
	namespace = "e2e-" + runID

	setup := exec.Command("bash", "setup.sh")
	setup.Stdout, setup.Stderr = os.Stdout, os.Stderr
	if err := setup.Run(); err != nil {
		fmt.Fprintln(os.Stderr, "e2e: setup.sh:", err)
		return 1
	}
	var err error
	if ctrd, err = e2eenv.Load(e2eenv.Flavor()); err != nil {
		fmt.Fprintln(os.Stderr, "e2e:", err)
		return 1
	}
	criEndpoint = ctrd.Endpoint

	dir, err := os.MkdirTemp("", "actorlet-e2e-bin-")
	if err != nil {
		fmt.Fprintln(os.Stderr, "e2e:", err)
		return 1
	}
	defer os.RemoveAll(dir)
	actorletBin = filepath.Join(dir, "actorlet")
	ctlBin = filepath.Join(dir, "actorletctl")
	natsServerBin = filepath.Join(dir, "nats-server")
	start := time.Now()
	for out, pkg := range map[string]string{
		actorletBin:   "github.com/actorlet/actorlet/cmd/actorlet",
		ctlBin:        "github.com/actorlet/actorlet/cmd/actorletctl",
		natsServerBin: "github.com/nats-io/nats-server/v2",
	} {
		build := exec.Command("go", "build", "-o", out, pkg)
		build.Stdout, build.Stderr = os.Stdout, os.Stderr
		if err := build.Run(); err != nil {
			fmt.Fprintf(os.Stderr, "e2e: build %s: %v\n", pkg, err)
			return 1
		}
	}
	fmt.Printf("e2e: run %s, namespace %s, containerd %s on %s, binaries built in %s\n", runID, namespace, ctrd.Version, criEndpoint, time.Since(start).Round(time.Millisecond))

	code := m.Run()

	// Whatever a test's own cleanup missed.
	if n, err := sweepNamespace(namespace); err != nil {
		fmt.Fprintln(os.Stderr, "e2e: final sweep:", err)
		code = 1
	} else if n > 0 {
		fmt.Printf("e2e: final sweep removed %d sandboxes of %s\n", n, namespace)
	}
	if n, err := reapOrphanShims(); err != nil {
		fmt.Fprintln(os.Stderr, "e2e: reap orphaned shims:", err)
	} else if n > 0 {
		fmt.Printf("e2e: killed %d containerd shims whose tasks containerd no longer knows\n", n)
	}
	return code
}
