package kuberuntime

import (
	"os"
	"path/filepath"
	"slices"
	"strconv"
	"strings"
	"syscall"
	"testing"

	v1 "k8s.io/api/core/v1"
	"k8s.io/apimachinery/pkg/api/resource"
	runtimeapi "k8s.io/cri-api/pkg/apis/runtime/v1"
)

func TestSandboxConfig(t *testing.T) {
	e := newEnv(t)
	pod := newPod("web", "app")
	pod.Annotations = map[string]string{"note": "x"}
	pod.Spec.Hostname = "custom"
	pod.Spec.Containers[0].Ports = []v1.ContainerPort{{ContainerPort: 80, HostPort: 8080, Protocol: v1.ProtocolUDP}}
	pod.Spec.SecurityContext = &v1.PodSecurityContext{Sysctls: []v1.Sysctl{{Name: "net.core.somaxconn", Value: "1024"}}}
	ndots := "2"
	pod.Spec.DNSConfig = &v1.PodDNSConfig{Nameservers: []string{"1.1.1.1"}, Searches: []string{"svc.local"}, Options: []v1.PodDNSConfigOption{{Name: "ndots", Value: &ndots}}}

	cfg, err := e.m.sandboxConfig(pod, 3)
	if err != nil {
		t.Fatal(err)
	}
	md := cfg.Metadata
	if md.Name != "web" || md.Namespace != "default" || md.Uid != "web-uid" || md.Attempt != 3 {
		t.Errorf("metadata = %+v", md)
	}
	for k, v := range map[string]string{LabelPodName: "web", LabelPodNamespace: "default", LabelPodUID: "web-uid", "app": "web"} {
		if cfg.Labels[k] != v {
			t.Errorf("label %s = %q, want %q", k, cfg.Labels[k], v)
		}
	}
	if cfg.Annotations["note"] != "x" {
		t.Errorf("annotations = %v", cfg.Annotations)
	}
	if want := filepath.Join(e.m.opts.PodLogsDir, "default_web_web-uid"); cfg.LogDirectory != want {
		t.Errorf("log dir = %q, want %q", cfg.LogDirectory, want)
	}
	if cfg.Hostname != "custom" || cfg.Linux.SecurityContext.NamespaceOptions.Network != runtimeapi.NamespaceMode_POD {
		t.Errorf("hostname %q network %s", cfg.Hostname, cfg.Linux.SecurityContext.NamespaceOptions.Network)
	}
	if pm := cfg.PortMappings; len(pm) != 1 || pm[0].ContainerPort != 80 || pm[0].HostPort != 8080 || pm[0].Protocol != runtimeapi.Protocol_UDP {
		t.Errorf("port mappings = %v", pm)
	}
	if cfg.Linux.Sysctls["net.core.somaxconn"] != "1024" || cfg.Linux.CgroupParent != "" {
		t.Errorf("sysctls %v cgroup parent %q", cfg.Linux.Sysctls, cfg.Linux.CgroupParent)
	}
	if d := cfg.DnsConfig; d == nil || d.Servers[0] != "1.1.1.1" || d.Searches[0] != "svc.local" || d.Options[0] != "ndots:2" {
		t.Errorf("dns = %v", d)
	}

	pod.Spec.HostNetwork = true
	cfg, _ = e.m.sandboxConfig(pod, 0)
	if cfg.Hostname != "" || cfg.Linux.SecurityContext.NamespaceOptions.Network != runtimeapi.NamespaceMode_NODE {
		t.Errorf("host network: hostname %q network %s, want none and NODE", cfg.Hostname, cfg.Linux.SecurityContext.NamespaceOptions.Network)
	}

	if _, err := e.m.sandboxConfig(&v1.Pod{}, 0); err == nil {
		t.Error("pod without a name: no error")
	}
}

// The pod's groups reach the sandbox and every container as the kubelet
// gives them: fsGroup first, then supplementalGroups.
func TestSecurityContextGroups(t *testing.T) {
	e := newEnv(t)
	pod := newPod("web", "app")
	fsGroup, group := int64(2000), int64(1500)
	pod.Spec.SecurityContext = &v1.PodSecurityContext{FSGroup: &fsGroup, RunAsGroup: &group, SupplementalGroups: []int64{3000, 3001}}
	want := []int64{2000, 3000, 3001}
	sb, err := e.m.sandboxConfig(pod, 0)
	if err != nil {
		t.Fatal(err)
	}
	if sc := sb.Linux.SecurityContext; !slices.Equal(sc.SupplementalGroups, want) || sc.RunAsGroup.GetValue() != 1500 {
		t.Errorf("sandbox groups %v run as group %v, want %v and 1500", sc.SupplementalGroups, sc.RunAsGroup, want)
	}
	c := &pod.Spec.Containers[0]
	c.Command = []string{"sleep", "1"}
	cfg, err := e.m.containerConfig(pod, c, 0, nil, "sha256:abc")
	if err != nil {
		t.Fatal(err)
	}
	if got := cfg.Linux.SecurityContext.SupplementalGroups; !slices.Equal(got, want) {
		t.Errorf("container groups %v, want %v", got, want)
	}
}

func TestContainerConfig(t *testing.T) {
	e := newEnv(t)
	pod := newPod("web", "app")
	grace := int64(45)
	pod.Spec.TerminationGracePeriodSeconds = &grace
	pod.Spec.Volumes = []v1.Volume{
		{Name: "data", VolumeSource: v1.VolumeSource{HostPath: &v1.HostPathVolumeSource{Path: "/srv/data"}}},
		{Name: "scratch", VolumeSource: v1.VolumeSource{EmptyDir: &v1.EmptyDirVolumeSource{}}},
	}
	user, priv, ro := int64(1000), true, true
	c := &pod.Spec.Containers[0]
	c.Command = []string{"/bin/sh", "-c"}
	c.Args = []string{"echo $(GREETING) $(MISSING) $$(ESCAPED)"}
	c.WorkingDir = "/work"
	c.TerminationMessagePath = "/dev/termination-log"
	c.Env = []v1.EnvVar{
		{Name: "NAME", ValueFrom: &v1.EnvVarSource{FieldRef: &v1.ObjectFieldSelector{FieldPath: "metadata.name"}}},
		{Name: "NS", ValueFrom: &v1.EnvVarSource{FieldRef: &v1.ObjectFieldSelector{FieldPath: "metadata.namespace"}}},
		{Name: "UID", ValueFrom: &v1.EnvVarSource{FieldRef: &v1.ObjectFieldSelector{FieldPath: "metadata.uid"}}},
		{Name: "POD_IP", ValueFrom: &v1.EnvVarSource{FieldRef: &v1.ObjectFieldSelector{FieldPath: "status.podIP"}}},
		{Name: "HOST_IP", ValueFrom: &v1.EnvVarSource{FieldRef: &v1.ObjectFieldSelector{FieldPath: "status.hostIP"}}},
		{Name: "NODE", ValueFrom: &v1.EnvVarSource{FieldRef: &v1.ObjectFieldSelector{FieldPath: "spec.nodeName"}}},
		{Name: "GREETING", Value: "hello $(NAME)"},
	}
	c.Resources = v1.ResourceRequirements{
		Requests: v1.ResourceList{v1.ResourceCPU: resource.MustParse("250m")},
		Limits:   v1.ResourceList{v1.ResourceCPU: resource.MustParse("500m"), v1.ResourceMemory: resource.MustParse("64Mi")},
	}
	c.VolumeMounts = []v1.VolumeMount{{Name: "data", MountPath: "/data", ReadOnly: true}, {Name: "scratch", MountPath: "/tmp"}}
	c.SecurityContext = &v1.SecurityContext{RunAsUser: &user, Privileged: &priv, ReadOnlyRootFilesystem: &ro}
	c.Lifecycle = &v1.Lifecycle{PreStop: &v1.LifecycleHandler{Exec: &v1.ExecAction{Command: []string{"stop"}}}}

	cfg, err := e.m.containerConfig(pod, c, 2, []string{"10.1.0.5"}, "sha256:abc")
	if err != nil {
		t.Fatal(err)
	}
	if cfg.Metadata.Name != "app" || cfg.Metadata.Attempt != 2 || cfg.Image.Image != "sha256:abc" {
		t.Errorf("metadata %v image %v", cfg.Metadata, cfg.Image)
	}
	if cfg.LogPath != filepath.Join("app", "2.log") {
		t.Errorf("log path = %q", cfg.LogPath)
	}
	if cfg.Labels[LabelContainerName] != "app" || cfg.Labels[LabelPodUID] != "web-uid" || cfg.Labels["app"] != "web" {
		t.Errorf("labels = %v", cfg.Labels)
	}
	wantAnn := map[string]string{
		AnnotationContainerHash:          strconv.FormatUint(hashContainer(c), 16),
		AnnotationRestartCount:           "2",
		AnnotationTerminationMessagePath: "/dev/termination-log",
		AnnotationTerminationGracePeriod: "45",
	}
	for k, v := range wantAnn {
		if cfg.Annotations[k] != v {
			t.Errorf("annotation %s = %q, want %q", k, cfg.Annotations[k], v)
		}
	}
	if info := parseContainerInfo(cfg.Labels, cfg.Annotations); info.preStop == nil || info.preStop.Exec.Command[0] != "stop" || info.restartCount != 2 {
		t.Errorf("annotations do not round-trip: %+v", info)
	}
	env := map[string]string{}
	for _, kv := range cfg.Envs {
		env[kv.Key] = string(kv.Value)
	}
	wantEnv := map[string]string{"NAME": "web", "NS": "default", "UID": "web-uid", "POD_IP": "10.1.0.5", "HOST_IP": "10.0.0.1", "NODE": "node-1", "GREETING": "hello web"}
	for k, v := range wantEnv {
		if env[k] != v {
			t.Errorf("env %s = %q, want %q", k, env[k], v)
		}
	}
	if cfg.Args[0] != "echo hello web $(MISSING) $(ESCAPED)" || cfg.WorkingDir != "/work" {
		t.Errorf("args %q workdir %q", cfg.Args, cfg.WorkingDir)
	}
	r := cfg.Linux.Resources
	if r.CpuShares != 256 || r.CpuQuota != 50000 || r.CpuPeriod != 100000 || r.MemoryLimitInBytes != 64<<20 {
		t.Errorf("resources = %v", r)
	}
	sc := cfg.Linux.SecurityContext
	if sc.RunAsUser.GetValue() != 1000 || !sc.Privileged || !sc.ReadonlyRootfs {
		t.Errorf("security context = %v", sc)
	}
	if len(cfg.Mounts) != 3 || cfg.Mounts[0].HostPath != "/srv/data" || !cfg.Mounts[0].Readonly {
		t.Fatalf("mounts = %v", cfg.Mounts)
	}
	// The termination message file: one per instance, under the pod's
	// directory, writable by the container's user: owned by it (runAsUser
	// 1000) when the agent can give it away (root), else 0666.
	wantMode, wantUID := os.FileMode(0o666), uint32(os.Geteuid())
	if os.Geteuid() == 0 {
		wantMode, wantUID = ownedFileMode, 1000
	}
	if tm := cfg.Mounts[2]; tm.ContainerPath != "/dev/termination-log" || !strings.HasPrefix(tm.HostPath, filepath.Join(e.m.opts.PodsDir, "web-uid", "containers", "app")+"/") {
		t.Errorf("termination message mount = %v", tm)
	} else if fi, err := os.Stat(tm.HostPath); err != nil || fi.Mode().Perm() != wantMode || fi.Sys().(*syscall.Stat_t).Uid != wantUID {
		t.Errorf("termination message file: %v %v, want mode %v uid %d", fi, err, wantMode, wantUID)
	}
	wantDir := filepath.Join(e.m.opts.PodsDir, "web-uid", "volumes", "emptydir", "scratch")
	if cfg.Mounts[1].HostPath != wantDir {
		t.Errorf("emptyDir host path = %q, want %q", cfg.Mounts[1].HostPath, wantDir)
	}
	if fi, err := os.Stat(wantDir); err != nil || !fi.IsDir() {
		t.Errorf("emptyDir not created: %v", err)
	}
}

func TestContainerConfigErrors(t *testing.T) {
	tests := []struct {
		name   string
		mutate func(p *v1.Pod)
	}{
		{"mount of a missing volume", func(p *v1.Pod) {
			p.Spec.Containers[0].VolumeMounts = []v1.VolumeMount{{Name: "nope", MountPath: "/x"}}
		}},
		{"unsupported volume type", func(p *v1.Pod) {
			p.Spec.Volumes = []v1.Volume{{Name: "cm", VolumeSource: v1.VolumeSource{ConfigMap: &v1.ConfigMapVolumeSource{}}}}
			p.Spec.Containers[0].VolumeMounts = []v1.VolumeMount{{Name: "cm", MountPath: "/x"}}
		}},
		{"subPath escaping the volume", func(p *v1.Pod) {
			p.Spec.Volumes = []v1.Volume{{Name: "s", VolumeSource: v1.VolumeSource{EmptyDir: &v1.EmptyDirVolumeSource{}}}}
			p.Spec.Containers[0].VolumeMounts = []v1.VolumeMount{{Name: "s", MountPath: "/x", SubPath: "../../etc"}}
		}},
		{"unsupported fieldRef", func(p *v1.Pod) {
			p.Spec.Containers[0].Env = []v1.EnvVar{{Name: "X", ValueFrom: &v1.EnvVarSource{FieldRef: &v1.ObjectFieldSelector{FieldPath: "spec.bogus"}}}}
		}},
		{"secret env", func(p *v1.Pod) {
			p.Spec.Containers[0].Env = []v1.EnvVar{{Name: "X", ValueFrom: &v1.EnvVarSource{SecretKeyRef: &v1.SecretKeySelector{Key: "k"}}}}
		}},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			e := newEnv(t)
			pod := newPod("web", "app")
			tt.mutate(pod)
			if _, err := e.m.containerConfig(pod, &pod.Spec.Containers[0], 0, nil, "img"); err == nil {
				t.Error("no error")
			} else {
				t.Log(err)
			}
		})
	}
}

func TestHashContainerStable(t *testing.T) {
	a := v1.Container{Name: "a", Image: "x:1", Env: []v1.EnvVar{{Name: "K", Value: "V"}}}
	b := a
	if hashContainer(&a) != hashContainer(&b) {
		t.Error("equal specs hash differently")
	}
	b.Image = "x:2"
	if hashContainer(&a) == hashContainer(&b) {
		t.Error("image change did not change the hash")
	}
	c := a
	c.ReadinessProbe = &v1.Probe{PeriodSeconds: 5}
	if hashContainer(&a) != hashContainer(&c) {
		t.Error("a probe change changed the hash")
	}
}

func TestPullPolicyDefault(t *testing.T) {
	for image, want := range map[string]v1.PullPolicy{
		"busybox": v1.PullAlways, "busybox:latest": v1.PullAlways, "busybox:1.36": v1.PullIfNotPresent,
		"localhost:5000/app": v1.PullAlways, "localhost:5000/app:v2": v1.PullIfNotPresent, "app@sha256:abc": v1.PullIfNotPresent,
	} {
		if got := pullPolicy(&v1.Container{Image: image}); got != want {
			t.Errorf("%s: %s, want %s", image, got, want)
		}
	}
}

func TestExpand(t *testing.T) {
	defined := map[string]string{"A": "1", "B": "two", "R": "$(A)"}
	for in, want := range map[string]string{
		"$(A)-$(B)": "1-two", "$(C)": "$(C)", "$$(A)": "$(A)", "$(A": "$(A", "cost $5": "cost $5", "": "",
		"$(R)": "$(A)", "x$$": "x$", "$": "$", "a$(A)b$(A": "a1b$(A", "$(C)$(A)": "$(C)1",
	} {
		if got, err := expand(in, defined, "f", newEnvBudget()); err != nil || got != want {
			t.Errorf("expand(%q) = %q, %v, want %q", in, got, err, want)
		}
	}
}

// TestEnvExpansionBomb: a ~15 KB pod whose env has three levels of 1,000
// references (~1e12 bytes expanded) fails fast with an error naming the
// variable and the limit, without allocating the expansion.
func TestEnvExpansionBomb(t *testing.T) {
	e := newEnv(t)
	pod := newPod("bomb", "app")
	refs := func(name string) string { return strings.Repeat("$("+name+")", 1000) }
	pod.Spec.Containers[0].Env = []v1.EnvVar{
		{Name: "A", Value: strings.Repeat("x", 1000)},
		{Name: "B", Value: refs("A")[:5*100]}, // 100 refs: 100 KB
		{Name: "C", Value: refs("B")},         // 100 MB
		{Name: "D", Value: refs("C")},         // 100 GB
	}
	_, err := e.m.containerConfig(pod, &pod.Spec.Containers[0], 0, nil, "img")
	if err == nil || !strings.Contains(err.Error(), `env[2] "C"`) || !strings.Contains(err.Error(), "MaxExpandedEnvBytes") {
		t.Fatalf("containerConfig of an env bomb = %v, want an error naming env[2] \"C\" and MaxExpandedEnvBytes", err)
	}

	// The same bomb through command and args.
	pod = newPod("bomb2", "app")
	pod.Spec.Containers[0].Env = []v1.EnvVar{{Name: "A", Value: strings.Repeat("x", 2000)}}
	pod.Spec.Containers[0].Args = []string{"ok", refs("A")}
	_, err = e.m.containerConfig(pod, &pod.Spec.Containers[0], 0, nil, "img")
	if err == nil || !strings.Contains(err.Error(), "args[1]") {
		t.Fatalf("containerConfig of an args bomb = %v, want an error naming args[1]", err)
	}

	// Just under the limit is fine.
	pod = newPod("big", "app")
	pod.Spec.Containers[0].Env = []v1.EnvVar{{Name: "A", Value: strings.Repeat("x", 1000)}, {Name: "B", Value: refs("A")[:5*500]}}
	if _, err := e.m.containerConfig(pod, &pod.Spec.Containers[0], 0, nil, "img"); err != nil {
		t.Fatalf("containerConfig of a 500 KB env = %v", err)
	}
}

func TestContainerMessageCut(t *testing.T) {
	long := strings.Repeat("a", 10<<20) + "the end"
	got := toContainerStatus(&runtimeapi.ContainerStatus{Id: "c", Message: long})
	if len(got.Message) != MaxContainerMessageBytes || !strings.HasSuffix(got.Message, "the end") {
		t.Errorf("message of %d bytes kept as %d bytes, want the last %d", len(long), len(got.Message), MaxContainerMessageBytes)
	}
}
