package fleet

import (
	"fmt"
	"path/filepath"
	"runtime"
	"strings"
	"testing"

	v1 "k8s.io/api/core/v1"
)

// examplesDir is the repository's examples/ directory.
func examplesDir(t *testing.T) string {
	_, file, _, ok := runtime.Caller(0)
	if !ok {
		t.Fatal("no caller")
	}
	return filepath.Join(filepath.Dir(file), "..", "..", "..", "examples")
}

// testExamples applies the real-world manifests of examples/ unchanged to
// a live node on the process runtime and checks that each runs as it
// says: the web app Ready with env from its ConfigMap and Secret, the log
// shipper sidecar started first and shipping the app's log, the job
// Completed.
func testExamples(t *testing.T, f *fleet) {
	n := f.startNode(t, "ex-n1", map[string]string{"role": "examples"}, nil)
	dir := examplesDir(t)
	for _, file := range []string{"web-app.yaml", "sidecar-log-shipper.yaml", "job.yaml", "hello.yaml"} {
		f.mustCtl(t, "apply", "-f", filepath.Join(dir, file), "--node", n.name)
	}

	f.waitPod(t, n.name, "default", "web", "ready", func(p *v1.Pod) bool {
		return isRunning(p) && p.Status.ContainerStatuses[0].Ready
	})
	eventually(t, waitFor, func() error {
		if out := f.mustCtl(t, "logs", "web", "--node", n.name); !strings.Contains(out, "starting on port 8080 as web: hello from actorlet") {
			return fmt.Errorf("web log: %q", out)
		}
		return nil
	})

	f.waitPod(t, n.name, "default", "log-shipper", "running with its sidecar started", func(p *v1.Pod) bool {
		if !isRunning(p) || len(p.Status.InitContainerStatuses) != 1 {
			return false
		}
		s := p.Status.InitContainerStatuses[0]
		return s.State.Running != nil && s.Started != nil && *s.Started
	})
	eventually(t, waitFor, func() error {
		if out := f.mustCtl(t, "logs", "log-shipper", "-c", "shipper", "--node", n.name); !strings.Contains(out, "request ") {
			return fmt.Errorf("shipper log: %q", out)
		}
		return nil
	})

	job := f.waitPod(t, n.name, "default", "report", "Succeeded", func(p *v1.Pod) bool { return p != nil && p.Status.Phase == v1.PodSucceeded })
	if cs := job.Status.InitContainerStatuses; len(cs) != 1 || cs[0].State.Terminated == nil || cs[0].State.Terminated.ExitCode != 0 {
		t.Errorf("init container: %+v", cs)
	}
	f.waitRunning(t, n.name, "default", "hello")

	for _, p := range []string{"web", "log-shipper", "report", "hello"} {
		f.ctl(t, "delete", "pod", p, "--node", n.name, "--now")
	}
}
