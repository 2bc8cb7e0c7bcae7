package main

import (
	"errors"
	"fmt"
	"io/fs"
	"os"
	"path/filepath"
	"sort"
	"strings"
	"sync"

	"google.golang.org/protobuf/proto"
	runtimeapi "k8s.io/cri-api/pkg/apis/runtime/v1"

	"github.com/actorlet/actorlet/cri/kuberuntime"
)

// podTemplate is the sandbox and container configuration the agent sent
// for one of its pods, captured from its calls: raw CRI replays it for
// pods of its own, so the floor can be measured for the same pod the agent
// makes (its pod cgroup, its mounts, its labels and annotations), not only
// for a minimal one.
type podTemplate struct {
	mu        sync.Mutex
	sandbox   *runtimeapi.PodSandboxConfig
	container *runtimeapi.ContainerConfig
}

// agentPod reports whether labels are those of a pod an agent made (raw
// CRI's pods carry no node label).
func agentPod(labels map[string]string) bool { return labels[kuberuntime.LabelNode] != "" }

// captureSandbox and captureContainer keep the first configuration of an
// agent's pod; a nil template keeps nothing.
func (t *podTemplate) captureSandbox(c *runtimeapi.PodSandboxConfig) {
	if t != nil {
		capture(t, &t.sandbox, c, c.GetLabels())
	}
}

func (t *podTemplate) captureContainer(c *runtimeapi.ContainerConfig) {
	if t != nil {
		capture(t, &t.container, c, c.GetLabels())
	}
}

// capture keeps a copy of c, an agent's configuration (by its labels), in
// *kept unless one is kept already.
func capture[M proto.Message](t *podTemplate, kept *M, c M, labels map[string]string) {
	if !agentPod(labels) {
		return
	}
	t.mu.Lock()
	defer t.mu.Unlock()
	var none M
	if any(*kept) == any(none) {
		*kept = proto.Clone(c).(M)
	}
}

// configs are the captured configurations, or nils before the agent made a
// pod.
func (t *podTemplate) configs() (*runtimeapi.PodSandboxConfig, *runtimeapi.ContainerConfig) {
	t.mu.Lock()
	defer t.mu.Unlock()
	if t.sandbox == nil || t.container == nil {
		return nil, nil
	}
	return proto.Clone(t.sandbox).(*runtimeapi.PodSandboxConfig), proto.Clone(t.container).(*runtimeapi.ContainerConfig)
}

// rawPodCgroupRoot is the cgroupfs parent of the raw pods that replay the
// agent's pod cgroup: one per run, removed after each round
// (removeCgroupTree).
func rawPodCgroupRoot(run string) string { return "/actorlet-bench-" + run }

// asRawPod makes the captured configurations those of raw pod name: its
// identity, labels and log directory; its own pod cgroup under
// cgroupRoot, at the depth of the agent's (<root>/<qos>/pod<uid>); and a
// fresh host file or directory in podDir for every mount the agent backed
// with one of its own (the termination message's file).
func asRawPod(sc *runtimeapi.PodSandboxConfig, cc *runtimeapi.ContainerConfig, name, uid, podDir, cgroupRoot string, labels map[string]string) error {
	sc.Metadata = &runtimeapi.PodSandboxMetadata{Name: name, Namespace: benchNamespace, Uid: uid}
	sc.Hostname = name
	sc.Labels = labels
	sc.LogDirectory = podDir
	if lc := sc.GetLinux(); lc != nil && lc.CgroupParent != "" {
		qos := filepath.Base(filepath.Dir(lc.CgroupParent)) // besteffort, burstable, or kubepods for guaranteed
		lc.CgroupParent = filepath.Join(cgroupRoot, qos, "pod"+uid)
	}
	cl := map[string]string{kuberuntime.LabelContainerName: cc.GetMetadata().GetName()}
	for k, v := range labels {
		cl[k] = v
	}
	cc.Labels = cl
	for i, m := range cc.Mounts {
		st, err := os.Stat(m.HostPath)
		if err != nil {
			return fmt.Errorf("the agent's mount %s: %w", m.HostPath, err)
		}
		host := filepath.Join(podDir, fmt.Sprintf("mount-%d", i))
		if st.IsDir() {
			err = os.MkdirAll(host, 0o755)
		} else {
			err = os.WriteFile(host, nil, 0o666)
		}
		if err != nil {
			return fmt.Errorf("back mount %s: %w", m.ContainerPath, err)
		}
		m.HostPath = host
	}
	if err := os.MkdirAll(filepath.Join(podDir, filepath.Dir(cc.LogPath)), 0o755); err != nil {
		return fmt.Errorf("create container log dir: %w", err)
	}
	return nil
}

// removeCgroupTree removes cgroup root (a cgroupfs path) and everything
// below it from every hierarchy, deepest first; the cgroups must be empty
// (their sandboxes removed). Gone already is fine.
func removeCgroupTree(root string) error {
	hierarchies, err := filepath.Glob("/sys/fs/cgroup/*")
	if err != nil {
		return err
	}
	hierarchies = append(hierarchies, "/sys/fs/cgroup") // cgroup v2
	var errs []error
	for _, h := range hierarchies {
		top := filepath.Join(h, root)
		var dirs []string
		_ = filepath.WalkDir(top, func(p string, d fs.DirEntry, err error) error {
			if err == nil && d.IsDir() {
				dirs = append(dirs, p)
			}
			return nil
		})
		sort.Slice(dirs, func(i, j int) bool { return strings.Count(dirs[i], "/") > strings.Count(dirs[j], "/") })
		for _, d := range dirs {
			if err := os.Remove(d); err != nil && !errors.Is(err, fs.ErrNotExist) {
				errs = append(errs, err)
			}
		}
	}
	return errors.Join(errs...)
}
