package main

import (
	"context"
	"fmt"
	"os"
	"path/filepath"
	"strconv"
	"time"

	runtimeapi "k8s.io/cri-api/pkg/apis/runtime/v1"

	"github.com/actorlet/actorlet/cri"
	"github.com/actorlet/actorlet/cri/kuberuntime"
	"github.com/actorlet/actorlet/cri/procruntime"
	"github.com/actorlet/actorlet/test/e2eenv"
)

// realRuntime is a runtime that runs real containers: containerd when its
// socket answers, else the embedded process runtime started here.
type realRuntime struct {
	kind   string // printed in every table
	client *cri.Client
	image  string
	pid    string // the runtime's process, for CPU figures ("self" when in process)
	close  func()
	clock  *callClock // times the start calls made through timed()
	// template keeps the first pod configuration an agent sent through
	// timed()
	template *podTemplate
}

// timed is the client with its start calls timed by r.clock, and the
// agent's pod configuration kept in r.template.
func (r *realRuntime) timed() timedClient {
	return timedClient{Client: r.client, clock: r.clock, template: r.template}
}

// openRuntime picks the runtime: want is "auto", "containerd" or "process".
func openRuntime(ctx context.Context, want, dir string) (*realRuntime, error) {
	if want == "auto" || want == "containerd" {
		rt, err := openContainerd(ctx)
		if err == nil || want == "containerd" {
			return rt, err
		}
	}
	return openProcess(ctx, dir)
}

// openContainerd connects to the containerd test/e2e/setup.sh set up, the
// flavor ACTORLET_E2E_CONTAINERD picks (2, the default, or 1.6), as make
// e2e does.
func openContainerd(ctx context.Context) (*realRuntime, error) {
	ctrd, err := e2eenv.Load(e2eenv.Flavor())
	if err != nil {
		return nil, err
	}
	pid := ""
	if p, err := ctrd.PID(); err == nil {
		pid = strconv.Itoa(p)
	}
	dctx, cancel := context.WithTimeout(ctx, 3*time.Second)
	defer cancel()
	c, err := cri.Dial(dctx, ctrd.Endpoint, cri.WithTimeout(2*time.Minute), cri.WithLongTimeout(4*time.Minute))
	if err != nil {
		return nil, fmt.Errorf("connect to containerd %s: %w", ctrd.Endpoint, err)
	}
	v, err := c.Version(dctx, "v1")
	if err != nil {
		c.Close()
		return nil, fmt.Errorf("containerd version: %w", err)
	}
	return &realRuntime{
		kind: v.RuntimeName + " " + v.RuntimeVersion, client: c, image: "actorlet.local/busybox:e2e",
		pid: pid, close: func() { c.Close() }, clock: newCallClock(), template: &podTemplate{},
	}, nil
}

func openProcess(ctx context.Context, dir string) (*realRuntime, error) {
	sockDir, err := os.MkdirTemp("", "ab")
	if err != nil {
		return nil, fmt.Errorf("create the runtime socket directory: %w", err)
	}
	endpoint := "unix://" + filepath.Join(sockDir, "cri.sock")
	rt, err := procruntime.Start(procruntime.Options{RootDir: filepath.Join(dir, "procrt"), HostIP: "127.0.0.1"}, endpoint)
	if err != nil {
		os.RemoveAll(sockDir)
		return nil, err
	}
	dctx, cancel := context.WithTimeout(ctx, 10*time.Second)
	defer cancel()
	c, err := cri.Dial(dctx, endpoint)
	if err != nil {
		rt.Destroy()
		os.RemoveAll(sockDir)
		return nil, fmt.Errorf("connect to the process runtime: %w", err)
	}
	return &realRuntime{
		kind: "process runtime (in process)", client: c, image: "bench/sleep:1", pid: "self",
		close: func() { c.Close(); rt.Destroy(); os.RemoveAll(sockDir) }, clock: newCallClock(), template: &podTemplate{},
	}, nil
}

// cleanNamespace stops and removes every sandbox of the benchmark's
// namespace: this run's and any left by an interrupted one. Nothing else on
// the runtime is touched.
func (r *realRuntime) cleanNamespace(ctx context.Context) (int, error) {
	return r.removeSandboxes(ctx, 8)
}

// teardown stops and removes the benchmark namespace's sandboxes conc at a
// time: the raw teardown figure.
func (r *realRuntime) teardown(ctx context.Context, conc int) error {
	_, err := r.removeSandboxes(ctx, conc)
	return err
}

// removeSandboxes stops and removes every sandbox of the benchmark's
// namespace, conc at a time, and returns how many it found.
func (r *realRuntime) removeSandboxes(ctx context.Context, conc int) (int, error) {
	sbs, err := r.client.ListPodSandbox(ctx, &runtimeapi.PodSandboxFilter{
		LabelSelector: map[string]string{kuberuntime.LabelPodNamespace: benchNamespace},
	})
	if err != nil {
		return 0, fmt.Errorf("list the benchmark's sandboxes: %w", err)
	}
	err = parallel(ctx, conc, sbs, func(ctx context.Context, s *runtimeapi.PodSandbox) error {
		if s.GetMetadata().GetNamespace() != benchNamespace {
			return nil
		}
		// The agent may be removing the same sandbox: gone is fine.
		if err := r.client.StopPodSandbox(ctx, s.Id); err != nil && !cri.IsNotFound(err) {
			return fmt.Errorf("stop sandbox %s: %w", s.Id, err)
		}
		if err := r.client.RemovePodSandbox(ctx, s.Id); err != nil && !cri.IsNotFound(err) {
			return fmt.Errorf("remove sandbox %s: %w", s.Id, err)
		}
		return nil
	})
	return len(sbs), err
}

// cleanUntilGone cleans the benchmark's namespace until two listings in a
// row find nothing (a sandbox an agent was creating when it stopped can
// appear after a first pass), for at most a minute; it reports what stayed.
func (r *realRuntime) cleanUntilGone() {
	ctx, cancel := context.WithTimeout(context.Background(), time.Minute)
	defer cancel()
	empty := 0
	for empty < 2 {
		n, err := r.cleanNamespace(ctx)
		switch {
		case err != nil && ctx.Err() != nil:
			fmt.Fprintf(os.Stderr, "warning: the benchmark namespace %s is not clean on %s: %v\n", benchNamespace, r.kind, err)
			return
		case err == nil && n == 0:
			empty++
		default:
			empty = 0
		}
		select {
		case <-ctx.Done():
			fmt.Fprintf(os.Stderr, "warning: the benchmark namespace %s is not clean on %s after a minute\n", benchNamespace, r.kind)
			return
		case <-time.After(500 * time.Millisecond):
		}
	}
}

// rawStart creates one pod with only the three CRI calls and nothing
// else: the floor the agent is compared with. The pod is a minimal one, or
// with asAgent the agent's own configuration (podTemplate) made the raw
// pod's.
func (r *realRuntime) rawStart(ctx context.Context, logRoot, run, name string, command []string, asAgent bool) error {
	uid := "raw-" + run + "-" + name
	labels := map[string]string{
		kuberuntime.LabelPodName: name, kuberuntime.LabelPodNamespace: benchNamespace,
		kuberuntime.LabelPodUID: uid, runLabel: run,
	}
	logDir := filepath.Join(logRoot, uid)
	if err := os.MkdirAll(logDir, 0o755); err != nil {
		return fmt.Errorf("create log dir: %w", err)
	}
	sc, cc := minimalPod(name, uid, logDir, labels, r.image, command)
	if asAgent {
		if sc, cc = r.template.configs(); sc == nil {
			return fmt.Errorf("no pod configuration of the agent's was captured")
		}
		if err := asRawPod(sc, cc, name, uid, logDir, rawPodCgroupRoot(run), labels); err != nil {
			return err
		}
	} else if err := os.MkdirAll(filepath.Join(logDir, "c"), 0o755); err != nil {
		return fmt.Errorf("create container log dir: %w", err)
	}
	timed := r.timed()
	sb, err := timed.RunPodSandbox(ctx, sc, "")
	if err != nil {
		return fmt.Errorf("run sandbox %s: %w", name, err)
	}
	id, err := timed.CreateContainer(ctx, sb, cc, sc)
	if err != nil {
		return fmt.Errorf("create container in %s: %w", name, err)
	}
	if err := timed.StartContainer(ctx, id); err != nil {
		return fmt.Errorf("start container %s: %w", id, err)
	}
	return nil
}

// minimalPod is the least configuration of a pod running command: its
// identity, labels and log directory, nothing else.
func minimalPod(name, uid, logDir string, labels map[string]string, image string, command []string) (*runtimeapi.PodSandboxConfig, *runtimeapi.ContainerConfig) {
	sc := &runtimeapi.PodSandboxConfig{
		Metadata:     &runtimeapi.PodSandboxMetadata{Name: name, Namespace: benchNamespace, Uid: uid},
		Hostname:     name,
		Labels:       labels,
		LogDirectory: logDir,
		Linux: &runtimeapi.LinuxPodSandboxConfig{SecurityContext: &runtimeapi.LinuxSandboxSecurityContext{
			NamespaceOptions: &runtimeapi.NamespaceOption{Network: runtimeapi.NamespaceMode_POD, Pid: runtimeapi.NamespaceMode_CONTAINER, Ipc: runtimeapi.NamespaceMode_POD},
		}},
	}
	cl := map[string]string{kuberuntime.LabelContainerName: "c"}
	for k, v := range labels {
		cl[k] = v
	}
	cc := &runtimeapi.ContainerConfig{
		Metadata: &runtimeapi.ContainerMetadata{Name: "c"},
		Image:    &runtimeapi.ImageSpec{Image: image},
		Command:  command,
		Labels:   cl,
		LogPath:  "c/0.log",
		Linux:    &runtimeapi.LinuxContainerConfig{Resources: &runtimeapi.LinuxContainerResources{}},
	}
	return sc, cc
}

// ensureImage pulls the benchmark image unless the runtime has it (on
// containerd it is imported locally by test/e2e/setup.sh, not pullable).
func (r *realRuntime) ensureImage(ctx context.Context) error {
	st, err := r.client.ImageStatus(ctx, &runtimeapi.ImageSpec{Image: r.image}, false)
	if err == nil && st.GetImage() != nil {
		return nil
	}
	if _, err := r.client.PullImage(ctx, &runtimeapi.ImageSpec{Image: r.image}, nil, nil); err != nil {
		return fmt.Errorf("pull %s (on containerd, run test/e2e/setup.sh to import it): %w", r.image, err)
	}
	return nil
}
