package kuberuntime

import (
	"fmt"
	"os"
	"path/filepath"
	"strings"

	v1 "k8s.io/api/core/v1"
	runtimeapi "k8s.io/cri-api/pkg/apis/runtime/v1"
)

// podLogsDir is <PodLogsDir>/<ns>_<name>_<uid>, the sandbox's log directory.
func (m *Manager) podLogsDir(pod *v1.Pod) string {
	return filepath.Join(m.opts.PodLogsDir, fmt.Sprintf("%s_%s_%s", pod.Namespace, pod.Name, pod.UID))
}

// networkMode is the network namespace mode the pod asks for.
func networkMode(pod *v1.Pod) runtimeapi.NamespaceMode {
	if pod.Spec.HostNetwork {
		return runtimeapi.NamespaceMode_NODE
	}
	return runtimeapi.NamespaceMode_POD
}

// sandboxConfig builds the PodSandboxConfig of pod for the given attempt.
func (m *Manager) sandboxConfig(pod *v1.Pod, attempt uint32) (*runtimeapi.PodSandboxConfig, error) {
	if err := validatePodIdentity(pod); err != nil {
		return nil, err
	}
	cfg := &runtimeapi.PodSandboxConfig{
		Metadata: &runtimeapi.PodSandboxMetadata{
			Name:      pod.Name,
			Namespace: pod.Namespace,
			Uid:       string(pod.UID),
			Attempt:   attempt,
		},
		Labels:       podLabels(pod, m.opts.NodeName),
		Annotations:  copyMap(pod.Annotations),
		LogDirectory: m.podLogsDir(pod),
		DnsConfig:    dnsConfig(pod),
		PortMappings: portMappings(pod),
		Linux:        sandboxLinuxConfig(pod),
	}
	if !pod.Spec.HostNetwork {
		cfg.Hostname = pod.Name
		if pod.Spec.Hostname != "" {
			cfg.Hostname = pod.Spec.Hostname
		}
	}
	return cfg, nil
}

func validatePodIdentity(pod *v1.Pod) error {
	switch {
	case pod == nil:
		return fmt.Errorf("pod: must not be nil")
	case pod.Name == "":
		return fmt.Errorf("pod metadata.name: must not be empty")
	case pod.Namespace == "":
		return fmt.Errorf("pod %q metadata.namespace: must not be empty", pod.Name)
	case pod.UID == "":
		return fmt.Errorf("pod %s/%s metadata.uid: must not be empty", pod.Namespace, pod.Name)
	}
	return nil
}

func dnsConfig(pod *v1.Pod) *runtimeapi.DNSConfig {
	dc := pod.Spec.DNSConfig
	if dc == nil {
		return nil
	}
	out := &runtimeapi.DNSConfig{
		Servers:  append([]string(nil), dc.Nameservers...),
		Searches: append([]string(nil), dc.Searches...),
	}
	for _, o := range dc.Options {
		if o.Value != nil {
			out.Options = append(out.Options, o.Name+":"+*o.Value)
		} else {
			out.Options = append(out.Options, o.Name)
		}
	}
	return out
}

func portMappings(pod *v1.Pod) []*runtimeapi.PortMapping {
	var out []*runtimeapi.PortMapping
	for _, c := range pod.Spec.Containers {
		for _, p := range c.Ports {
			proto := runtimeapi.Protocol_TCP
			switch strings.ToUpper(string(p.Protocol)) {
			case "UDP":
				proto = runtimeapi.Protocol_UDP
			case "SCTP":
				proto = runtimeapi.Protocol_SCTP
			}
			out = append(out, &runtimeapi.PortMapping{
				Protocol:      proto,
				ContainerPort: p.ContainerPort,
				HostPort:      p.HostPort,
				HostIp:        p.HostIP,
			})
		}
	}
	return out
}

func sandboxLinuxConfig(pod *v1.Pod) *runtimeapi.LinuxPodSandboxConfig {
	ns := &runtimeapi.NamespaceOption{
		Network: networkMode(pod),
		Pid:     runtimeapi.NamespaceMode_CONTAINER,
		Ipc:     runtimeapi.NamespaceMode_POD,
	}
	if pod.Spec.HostPID {
		ns.Pid = runtimeapi.NamespaceMode_NODE
	} else if pod.Spec.ShareProcessNamespace != nil && *pod.Spec.ShareProcessNamespace {
		ns.Pid = runtimeapi.NamespaceMode_POD
	}
	if pod.Spec.HostIPC {
		ns.Ipc = runtimeapi.NamespaceMode_NODE
	}
	lc := &runtimeapi.LinuxPodSandboxConfig{
		// CgroupParent is the pod's cgroup with QoS cgroups on (SyncPod
		// sets it from Options.PodCgroups); empty, the runtime's default.
		SecurityContext: &runtimeapi.LinuxSandboxSecurityContext{NamespaceOptions: ns},
	}
	if psc := pod.Spec.SecurityContext; psc != nil {
		if len(psc.Sysctls) > 0 {
			lc.Sysctls = make(map[string]string, len(psc.Sysctls))
			for _, s := range psc.Sysctls {
				lc.Sysctls[s.Name] = s.Value
			}
		}
		if psc.RunAsUser != nil {
			lc.SecurityContext.RunAsUser = &runtimeapi.Int64Value{Value: *psc.RunAsUser}
		}
		if psc.RunAsGroup != nil {
			lc.SecurityContext.RunAsGroup = &runtimeapi.Int64Value{Value: *psc.RunAsGroup}
		}
		lc.SecurityContext.SupplementalGroups = supplementalGroups(psc)
	}
	return lc
}

// ensurePodLogsDir creates the sandbox log directory, as the kubelet does
// before RunPodSandbox.
func (m *Manager) ensurePodLogsDir(pod *v1.Pod) error {
	if m.opts.PodLogsDir == "" {
		return nil
	}
	if err := os.MkdirAll(m.podLogsDir(pod), 0o755); err != nil {
		return fmt.Errorf("create pod log directory: %w", err)
	}
	return nil
}

func copyMap(in map[string]string) map[string]string {
	if in == nil {
		return nil
	}
	out := make(map[string]string, len(in))
	for k, v := range in {
		out[k] = v
	}
	return out
}
