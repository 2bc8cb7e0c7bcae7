package kuberuntime

import (
	"errors"
	"fmt"
	"io/fs"
	"os"
	"path/filepath"
	"strconv"

	v1 "k8s.io/api/core/v1"
	runtimeapi "k8s.io/cri-api/pkg/apis/runtime/v1"
)

// CPU shares and CFS quota as the kubelet derives them.
const (
	minShares     = 2
	maxShares     = 262144
	sharesPerCPU  = 1024
	milliCPUToCPU = 1000
	quotaPeriod   = 100000 // µs
	minQuota      = 1000   // µs
)

// containerLogPath is the log path relative to the sandbox log directory.
func containerLogPath(name string, restartCount int) string {
	return filepath.Join(name, strconv.Itoa(restartCount)+".log")
}

// containerConfig builds the CRI config of container c of pod, for its
// restartCount-th instance. podIPs feed status.podIP env references.
func (m *Manager) containerConfig(pod *v1.Pod, c *v1.Container, restartCount int, podIPs []string, imageRef string) (*runtimeapi.ContainerConfig, error) {
	budget := newEnvBudget()
	var skipped, secrets []string
	env, err := containerEnv(pod, c, podFieldValues{podIPs: podIPs, hostIP: m.opts.HostIP, allocatable: m.opts.Allocatable,
		container: c.Name, objects: m.opts.Objects, skipped: &skipped, secrets: &secrets}, budget)
	m.secrets.add(pod.UID, secrets)
	if err != nil {
		return nil, err
	}
	for _, msg := range skipped {
		m.event(pod, v1.EventTypeWarning, "InvalidEnvironmentVariableNames", "%s", msg)
	}
	defined := envMap(env)
	command, err := expandAll(c.Command, defined, fmt.Sprintf("container %q command", c.Name), budget)
	if err != nil {
		return nil, err
	}
	args, err := expandAll(c.Args, defined, fmt.Sprintf("container %q args", c.Name), budget)
	if err != nil {
		return nil, err
	}
	mounts, err := m.containerMounts(pod, c)
	if err != nil {
		return nil, err
	}
	if tm, err := m.terminationMessageMount(pod, c, mounts); err != nil {
		return nil, err
	} else if tm != nil {
		mounts = append(mounts, tm)
	}
	cfg := &runtimeapi.ContainerConfig{
		Metadata:    &runtimeapi.ContainerMetadata{Name: c.Name, Attempt: uint32(restartCount)},
		Image:       &runtimeapi.ImageSpec{Image: imageRef, UserSpecifiedImage: c.Image},
		Command:     command,
		Args:        args,
		WorkingDir:  c.WorkingDir,
		Labels:      containerLabels(pod, c, m.opts.NodeName),
		Annotations: containerAnnotations(pod, c, restartCount),
		Mounts:      mounts,
		LogPath:     containerLogPath(c.Name, restartCount),
		Stdin:       c.Stdin,
		StdinOnce:   c.StdinOnce,
		Tty:         c.TTY,
		Linux: &runtimeapi.LinuxContainerConfig{
			Resources:       linuxResources(c),
			SecurityContext: linuxSecurityContext(pod, c),
		},
	}
	for _, e := range env {
		cfg.Envs = append(cfg.Envs, &runtimeapi.KeyValue{Key: e.key, Value: []byte(e.value)})
	}
	return cfg, nil
}

// linuxResources maps requests and limits to cgroup settings: CPU shares
// from the request (the limit if no request), CFS quota from the CPU limit,
// the memory limit in bytes.
func linuxResources(c *v1.Container) *runtimeapi.LinuxContainerResources {
	r := &runtimeapi.LinuxContainerResources{}
	cpuReq, hasReq := c.Resources.Requests[v1.ResourceCPU]
	cpuLim, hasLim := c.Resources.Limits[v1.ResourceCPU]
	if !hasReq && hasLim {
		cpuReq, hasReq = cpuLim, true
	}
	shares := int64(minShares)
	if hasReq {
		shares = max(min(cpuReq.MilliValue()*sharesPerCPU/milliCPUToCPU, maxShares), minShares)
	}
	r.CpuShares = shares
	if hasLim {
		r.CpuPeriod = quotaPeriod
		r.CpuQuota = max(cpuLim.MilliValue()*quotaPeriod/milliCPUToCPU, minQuota)
	}
	if mem, ok := c.Resources.Limits[v1.ResourceMemory]; ok {
		r.MemoryLimitInBytes = mem.Value()
	}
	return r
}

func linuxSecurityContext(pod *v1.Pod, c *v1.Container) *runtimeapi.LinuxContainerSecurityContext {
	sc := &runtimeapi.LinuxContainerSecurityContext{
		NamespaceOptions: sandboxLinuxConfig(pod).SecurityContext.NamespaceOptions,
	}
	if psc := pod.Spec.SecurityContext; psc != nil {
		if psc.RunAsUser != nil {
			sc.RunAsUser = &runtimeapi.Int64Value{Value: *psc.RunAsUser}
		}
		if psc.RunAsGroup != nil {
			sc.RunAsGroup = &runtimeapi.Int64Value{Value: *psc.RunAsGroup}
		}
		sc.SupplementalGroups = supplementalGroups(psc)
	}
	if csc := c.SecurityContext; csc != nil {
		if csc.RunAsUser != nil {
			sc.RunAsUser = &runtimeapi.Int64Value{Value: *csc.RunAsUser}
		}
		if csc.RunAsGroup != nil {
			sc.RunAsGroup = &runtimeapi.Int64Value{Value: *csc.RunAsGroup}
		}
		if csc.Privileged != nil {
			sc.Privileged = *csc.Privileged
		}
		if csc.ReadOnlyRootFilesystem != nil {
			sc.ReadonlyRootfs = *csc.ReadOnlyRootFilesystem
		}
	}
	return sc
}

// supplementalGroups are the groups the kubelet gives a pod's processes:
// fsGroup first, then supplementalGroups.
func supplementalGroups(psc *v1.PodSecurityContext) []int64 {
	var groups []int64
	if psc.FSGroup != nil {
		groups = append(groups, *psc.FSGroup)
	}
	return append(groups, psc.SupplementalGroups...)
}

// emptyDirPath is <PodsDir>/<uid>/volumes/emptydir/<name>.
func (m *Manager) emptyDirPath(pod *v1.Pod, volume string) string {
	return filepath.Join(m.opts.PodsDir, string(pod.UID), "volumes", "emptydir", volume)
}

// containerMounts resolves c's volume mounts against the pod's hostPath and
// emptyDir volumes, creating emptyDir directories on first use.
func (m *Manager) containerMounts(pod *v1.Pod, c *v1.Container) ([]*runtimeapi.Mount, error) {
	volumes := make(map[string]*v1.Volume, len(pod.Spec.Volumes))
	for i := range pod.Spec.Volumes {
		volumes[pod.Spec.Volumes[i].Name] = &pod.Spec.Volumes[i]
	}
	var out []*runtimeapi.Mount
	for i, vm := range c.VolumeMounts {
		field := fmt.Sprintf("container %q volumeMounts[%d]", c.Name, i)
		vol, ok := volumes[vm.Name]
		if !ok {
			return nil, fmt.Errorf("%s.name: no volume %q in the pod", field, vm.Name)
		}
		if vm.MountPath == "" {
			return nil, fmt.Errorf("%s.mountPath: must not be empty", field)
		}
		var host string
		switch {
		case vol.HostPath != nil:
			host = vol.HostPath.Path
		case vol.EmptyDir != nil:
			if m.opts.PodsDir == "" {
				return nil, fmt.Errorf("%s: emptyDir volume %q needs the manager's PodsDir", field, vm.Name)
			}
			if _, err := m.ensurePodDir(pod, "volumes", "emptydir"); err != nil {
				return nil, fmt.Errorf("%s: create emptyDir: %w", field, err)
			}
			host = m.emptyDirPath(pod, vm.Name)
			switch vol.EmptyDir.Medium {
			case v1.StorageMediumDefault:
				if err := os.Mkdir(host, sharedDirMode); err != nil && !errors.Is(err, fs.ErrExist) {
					return nil, fmt.Errorf("%s: create emptyDir: %w", field, err)
				}
			case v1.StorageMediumMemory:
				if err := m.mountMemoryVolume(pod, vol); err != nil {
					return nil, fmt.Errorf("%s: %w", field, err)
				}
			default:
				return nil, fmt.Errorf("%s: emptyDir volume %q: medium %q is not supported (\"\" or Memory)", field, vm.Name, vol.EmptyDir.Medium)
			}
			uid, known := volumeUser(pod, vm.Name)
			if _, err := setOwnerMode(host, uid, known, ownedDirMode, sharedDirMode); err != nil {
				return nil, fmt.Errorf("%s: create emptyDir: %w", field, err)
			}
			if err := setFSGroup(pod, host, false); err != nil {
				return nil, fmt.Errorf("%s: emptyDir %q: %w", field, vm.Name, err)
			}
		case isProjected(vol):
			if m.opts.PodsDir == "" {
				return nil, fmt.Errorf("%s: volume %q needs the manager's PodsDir", field, vm.Name)
			}
			if _, err := m.ensurePodDir(pod, "volumes", "projected"); err != nil {
				return nil, fmt.Errorf("%s: %w", field, err)
			}
			if err := m.writeProjectedVolume(pod, vol); err != nil {
				return nil, fmt.Errorf("%s: %w", field, err)
			}
			host = m.projectedPath(pod, vol.Name)
		default:
			return nil, fmt.Errorf("%s: volume %q has an unsupported type (hostPath, emptyDir, downwardAPI, configMap, secret, projected)", field, vm.Name)
		}
		if vm.SubPath != "" {
			if filepath.IsAbs(vm.SubPath) || !filepath.IsLocal(vm.SubPath) {
				return nil, fmt.Errorf("%s.subPath %q: must be a relative path inside the volume", field, vm.SubPath)
			}
			if vol.EmptyDir != nil {
				// Inside the emptyDir, owned and moded as it is.
				uid, known := volumeUser(pod, vm.Name)
				if err := mkdirInside(host, vm.SubPath, uid, known); err != nil {
					return nil, fmt.Errorf("%s: create subPath: %w", field, err)
				}
			}
			host = filepath.Join(host, vm.SubPath)
		}
		out = append(out, &runtimeapi.Mount{
			ContainerPath: vm.MountPath,
			HostPath:      host,
			Readonly:      vm.ReadOnly,
		})
	}
	return out, nil
}

// ensureContainerLogDir creates <pod log dir>/<container>.
func (m *Manager) ensureContainerLogDir(pod *v1.Pod, name string) error {
	if m.opts.PodLogsDir == "" {
		return nil
	}
	if err := os.MkdirAll(filepath.Join(m.podLogsDir(pod), name), 0o755); err != nil {
		return fmt.Errorf("create container log directory: %w", err)
	}
	return nil
}
