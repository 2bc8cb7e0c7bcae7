//go:build e2e

package e2e

import (
	"context"
	"fmt"
	"strings"
	"testing"
	"time"

	"github.com/google/go-containerregistry/pkg/v1/mutate"
	runtimeapi "k8s.io/cri-api/pkg/apis/runtime/v1"

	"github.com/actorlet/actorlet/cri"
)

// suiteImagePrefix names the images setup.sh imports; the registry images
// of the scenarios are on loopback.
const suiteImagePrefix = "actorlet.local/"

// Scenario (issue 24): image garbage collection on containerd. An image a
// deleted pod pulled is removed once unused for longer than
// --image-maximum-gc-age; the image of a running pod and the sandbox
// (pause) image, which containerd 1.6 does not pin and no container lists,
// stay. Maximum-age collection removes every unused image of the runtime,
// so the scenario runs only where the runtime holds nothing but the
// suite's own images.
func TestImageGarbageCollection(t *testing.T) {
	rt := criFor(t)
	ctx, cancel := context.WithTimeout(context.Background(), 3*time.Minute)
	defer cancel()
	before, err := rt.ListImages(ctx, nil)
	if err != nil {
		t.Fatal(err)
	}
	for _, img := range before {
		if !suiteImage(img) {
			t.Skipf("the runtime holds image %v (%s), not the suite's: a maximum-age collection would remove it", img.GetRepoTags(), img.GetId())
		}
	}

	base := busyboxRegistryImage(t)
	cfg, err := base.ConfigFile()
	if err != nil {
		t.Fatal(err)
	}
	cfg = cfg.DeepCopy()
	cfg.Config.Env = append(cfg.Config.Env, "ACTORLET_E2E_IMAGE=gc-"+runID) // an image ID of its own
	img, err := mutate.ConfigFile(base, cfg)
	if err != nil {
		t.Fatal(err)
	}
	ref := startRegistry(t, "e2e/gc-victim", img, "", "")

	a := startAgent(t, agentOptions{args: []string{
		"--image-gc-period", "1s", "--image-minimum-gc-age", "0s", "--image-maximum-gc-age", "5s",
	}})
	keeper := shPod("gc-keeper", "sleep 3600") // the suite's busybox, in use throughout
	victim := shPod("gc-victim", "sleep 3600")
	victim.Spec.Containers[0].Image = ref
	a.apply(t, keeper, victim)
	a.waitPod(t, "gc-keeper", 2*time.Minute, isRunning)
	a.waitPod(t, "gc-victim", 2*time.Minute, isRunning)
	if present(ctx, t, rt, ref) == nil {
		t.Fatalf("%s not in the runtime after its pod ran", ref)
	}

	a.mustCtl(t, "delete", "pod", "gc-victim", "-n", namespace)
	eventually(t, 90*time.Second, func() error {
		if id := present(ctx, t, rt, ref); id != nil {
			return fmt.Errorf("%s (%s) still in the runtime", ref, id.GetId())
		}
		return nil
	})
	if !a.logContains("Removing unused image") {
		t.Errorf("the agent's log does not say it removed the image:\n%s", a.logGrep("image", 20))
	}
	for _, img := range before {
		if got := present(ctx, t, rt, img.GetId()); got == nil {
			t.Errorf("image %v (%s) was collected: in use or the sandbox image", img.GetRepoTags(), img.GetId())
		}
	}
	a.waitPod(t, "gc-keeper", 10*time.Second, isRunning)
}

// suiteImage reports whether img is one of the suite's (setup.sh's, or a
// scenario's on a loopback registry).
func suiteImage(img *runtimeapi.Image) bool {
	for _, n := range img.GetRepoTags() {
		if strings.HasPrefix(n, suiteImagePrefix) || strings.HasPrefix(n, "127.0.0.1:") {
			return true
		}
	}
	return false
}

// present is the runtime's image for ref (a name or ID), or nil.
func present(ctx context.Context, t *testing.T, rt *cri.Client, ref string) *runtimeapi.Image {
	t.Helper()
	st, err := rt.ImageStatus(ctx, &runtimeapi.ImageSpec{Image: ref}, false)
	if err != nil {
		t.Fatalf("image status of %s: %v", ref, err)
	}
	return st.GetImage()
}
