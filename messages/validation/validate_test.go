package validation

import (
	"strings"
	"testing"

	v1 "k8s.io/api/core/v1"
	"k8s.io/apimachinery/pkg/api/resource"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/util/intstr"
)

func validPod() *v1.Pod {
	return &v1.Pod{
		ObjectMeta: metav1.ObjectMeta{Name: "web.frontend"},
		Spec: v1.PodSpec{
			InitContainers: []v1.Container{{Name: "init", Image: "busybox:1.36"}},
			Containers: []v1.Container{{
				Name:  "nginx",
				Image: "nginx:1.27",
				Ports: []v1.ContainerPort{{Name: "http", ContainerPort: 80}},
				Resources: v1.ResourceRequirements{
					Requests: v1.ResourceList{v1.ResourceCPU: resource.MustParse("100m")},
					Limits:   v1.ResourceList{v1.ResourceCPU: resource.MustParse("1")},
				},
				LivenessProbe:  &v1.Probe{ProbeHandler: v1.ProbeHandler{HTTPGet: &v1.HTTPGetAction{Port: intstr.FromString("http")}}},
				ReadinessProbe: &v1.Probe{ProbeHandler: v1.ProbeHandler{TCPSocket: &v1.TCPSocketAction{Port: intstr.FromInt32(80)}}, SuccessThreshold: 3},
			}},
		},
	}
}

func TestValidatePod(t *testing.T) {
	tests := []struct {
		name   string
		mutate func(p *v1.Pod)
		want   []string // substrings, each must appear in the error
	}{
		{name: "valid", mutate: func(*v1.Pod) {}},
		{name: "missing name", mutate: func(p *v1.Pod) { p.Name = "" }, want: []string{"metadata.name: Required value"}},
		{name: "bad name", mutate: func(p *v1.Pod) { p.Name = "Web_1" }, want: []string{"metadata.name: Invalid value"}},
		{name: "namespace with dot", mutate: func(p *v1.Pod) { p.Namespace = "a.b" }, want: []string{"metadata.namespace: Invalid value"}},
		{name: "no containers", mutate: func(p *v1.Pod) { p.Spec.Containers = nil }, want: []string{"spec.containers: Required value"}},
		{name: "bad container name", mutate: func(p *v1.Pod) { p.Spec.Containers[0].Name = "Nginx" }, want: []string{"spec.containers[0].name: Invalid value"}},
		{name: "duplicate across init and regular", mutate: func(p *v1.Pod) { p.Spec.Containers[0].Name = "init" }, want: []string{"spec.containers[0].name: Duplicate value"}},
		{name: "image required", mutate: func(p *v1.Pod) { p.Spec.Containers[0].Image = "" }, want: []string{"spec.containers[0].image: Required value"}},
		{name: "image whitespace", mutate: func(p *v1.Pod) { p.Spec.InitContainers[0].Image = " busybox" }, want: []string{"spec.initContainers[0].image: Invalid value"}},
		{name: "restart policy", mutate: func(p *v1.Pod) { p.Spec.RestartPolicy = "Sometimes" }, want: []string{"spec.restartPolicy: Unsupported value"}},
		{name: "two volume sources", mutate: func(p *v1.Pod) {
			p.Spec.Volumes = []v1.Volume{{Name: "v", VolumeSource: v1.VolumeSource{EmptyDir: &v1.EmptyDirVolumeSource{}, HostPath: &v1.HostPathVolumeSource{Path: "/x"}}}}
		}, want: []string{"spec.volumes[0]: Forbidden: may not specify more than 1 volume type"}},
		{name: "persistent volume claim", mutate: func(p *v1.Pod) {
			p.Spec.Volumes = []v1.Volume{{Name: "data", VolumeSource: v1.VolumeSource{PersistentVolumeClaim: &v1.PersistentVolumeClaimVolumeSource{ClaimName: "data"}}}}
		}, want: []string{"spec.volumes[0].persistentVolumeClaim: Forbidden: not supported"}},
		{name: "service account token", mutate: func(p *v1.Pod) {
			p.Spec.Volumes = []v1.Volume{{Name: "token", VolumeSource: v1.VolumeSource{Projected: &v1.ProjectedVolumeSource{Sources: []v1.VolumeProjection{
				{ConfigMap: &v1.ConfigMapProjection{LocalObjectReference: v1.LocalObjectReference{Name: "cfg"}}},
				{ServiceAccountToken: &v1.ServiceAccountTokenProjection{Path: "token"}}}}}}}
		}, want: []string{"spec.volumes[0].projected.sources[1].serviceAccountToken: Forbidden: not supported"}},
		{name: "groups", mutate: func(p *v1.Pod) {
			g := int64(2000)
			p.Spec.SecurityContext = &v1.PodSecurityContext{FSGroup: &g, SupplementalGroups: []int64{3000, 3001}}
		}},
		{name: "negative groups", mutate: func(p *v1.Pod) {
			g := int64(-1)
			p.Spec.SecurityContext = &v1.PodSecurityContext{FSGroup: &g, SupplementalGroups: []int64{1 << 31}}
		}, want: []string{"spec.securityContext.fsGroup: Invalid value: -1", "spec.securityContext.supplementalGroups[0]: Invalid value: 2147483648"}},
		{name: "too many groups", mutate: func(p *v1.Pod) {
			g := int64(1)
			p.Spec.SecurityContext = &v1.PodSecurityContext{FSGroup: &g, SupplementalGroups: make([]int64, MaxSupplementalGroups)}
		}, want: []string{"spec.securityContext.supplementalGroups: Too many: 65: must have at most 64 items"}},
		{name: "requests above limits", mutate: func(p *v1.Pod) {
			p.Spec.Containers[0].Resources.Requests[v1.ResourceCPU] = resource.MustParse("2")
		}, want: []string{"spec.containers[0].resources.requests[cpu]: Invalid value", "limit of 1"}},
		{name: "negative memory", mutate: func(p *v1.Pod) {
			p.Spec.Containers[0].Resources.Limits[v1.ResourceMemory] = resource.MustParse("-1Mi")
		}, want: []string{"resources.limits[memory]: Invalid value"}},
		{name: "port out of range", mutate: func(p *v1.Pod) { p.Spec.Containers[0].Ports[0].ContainerPort = 70000 }, want: []string{"spec.containers[0].ports[0].containerPort"}},
		{name: "host port out of range", mutate: func(p *v1.Pod) { p.Spec.Containers[0].Ports[0].HostPort = -2 }, want: []string{"ports[0].hostPort"}},
		{name: "bad protocol", mutate: func(p *v1.Pod) { p.Spec.Containers[0].Ports[0].Protocol = "ICMP" }, want: []string{"ports[0].protocol: Unsupported value"}},
		{name: "liveness success threshold", mutate: func(p *v1.Pod) { p.Spec.Containers[0].LivenessProbe.SuccessThreshold = 2 }, want: []string{"livenessProbe.successThreshold: Invalid value: 2: must be 1"}},
		{name: "startup success threshold", mutate: func(p *v1.Pod) {
			p.Spec.Containers[0].StartupProbe = &v1.Probe{ProbeHandler: v1.ProbeHandler{Exec: &v1.ExecAction{Command: []string{"true"}}}, SuccessThreshold: 5}
		}, want: []string{"startupProbe.successThreshold"}},
		{name: "negative period", mutate: func(p *v1.Pod) { p.Spec.Containers[0].ReadinessProbe.PeriodSeconds = -1 }, want: []string{"readinessProbe.periodSeconds: Invalid value: -1: must be >= 1"}},
		{name: "probe without handler", mutate: func(p *v1.Pod) { p.Spec.Containers[0].LivenessProbe.HTTPGet = nil }, want: []string{"livenessProbe: Required value"}},
		{name: "probe with two handlers", mutate: func(p *v1.Pod) {
			p.Spec.Containers[0].LivenessProbe.Exec = &v1.ExecAction{Command: []string{"true"}}
		}, want: []string{"livenessProbe: Forbidden"}},
		{name: "probe on init container", mutate: func(p *v1.Pod) {
			p.Spec.InitContainers[0].LivenessProbe = &v1.Probe{ProbeHandler: v1.ProbeHandler{Exec: &v1.ExecAction{Command: []string{"true"}}}}
		}, want: []string{"spec.initContainers[0]: Forbidden"}},
		{name: "sidecar may have probes", mutate: func(p *v1.Pod) {
			always := v1.ContainerRestartPolicyAlways
			p.Spec.InitContainers[0].RestartPolicy = &always
			p.Spec.InitContainers[0].StartupProbe = &v1.Probe{ProbeHandler: v1.ProbeHandler{Exec: &v1.ExecAction{Command: []string{"true"}}}}
		}},
		{name: "mount of unknown volume", mutate: func(p *v1.Pod) {
			p.Spec.Containers[0].VolumeMounts = []v1.VolumeMount{{Name: "data", MountPath: "/data"}}
		}, want: []string{"volumeMounts[0].name: Not found"}},
		{name: "negative grace", mutate: func(p *v1.Pod) { g := int64(-1); p.Spec.TerminationGracePeriodSeconds = &g }, want: []string{"spec.terminationGracePeriodSeconds"}},
		{name: "every problem is listed", mutate: func(p *v1.Pod) {
			p.Name = ""
			p.Spec.Containers[0].Image = ""
			p.Spec.Containers[0].LivenessProbe.SuccessThreshold = 2
		}, want: []string{"metadata.name", "spec.containers[0].image", "livenessProbe.successThreshold"}},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			pod := validPod()
			tt.mutate(pod)
			SetDefaults(pod)
			err := ValidatePod(pod)
			if len(tt.want) == 0 {
				if err != nil {
					t.Fatalf("ValidatePod: %v", err)
				}
				return
			}
			if err == nil {
				t.Fatalf("ValidatePod accepted the pod, want errors %q", tt.want)
			}
			for _, w := range tt.want {
				if !strings.Contains(err.Error(), w) {
					t.Errorf("error %q does not mention %q", err, w)
				}
			}
		})
	}
}

func TestValidatePodNeedsDefaults(t *testing.T) {
	err := ValidatePod(validPod())
	if err == nil || !strings.Contains(err.Error(), "metadata.namespace: Required value") {
		t.Fatalf("undefaulted pod: error = %v, want namespace required", err)
	}
}

func TestSetDefaults(t *testing.T) {
	pod := validPod()
	pod.Spec.Containers = append(pod.Spec.Containers, v1.Container{Name: "side", Image: "registry:5000/app"})
	SetDefaults(pod)
	SetDefaults(pod) // idempotent
	c := pod.Spec.Containers[0]
	checks := []struct {
		name      string
		got, want any
	}{
		{"namespace", pod.Namespace, "default"},
		{"restartPolicy", pod.Spec.RestartPolicy, v1.RestartPolicyAlways},
		{"grace", *pod.Spec.TerminationGracePeriodSeconds, int64(30)},
		{"pull policy tagged", c.ImagePullPolicy, v1.PullIfNotPresent},
		{"pull policy untagged with registry port", pod.Spec.Containers[1].ImagePullPolicy, v1.PullAlways},
		{"port protocol", c.Ports[0].Protocol, v1.ProtocolTCP},
		{"probe period", c.LivenessProbe.PeriodSeconds, int32(10)},
		{"probe timeout", c.LivenessProbe.TimeoutSeconds, int32(1)},
		{"probe failure threshold", c.LivenessProbe.FailureThreshold, int32(3)},
		{"explicit success threshold kept", c.ReadinessProbe.SuccessThreshold, int32(3)},
		{"http scheme", c.LivenessProbe.HTTPGet.Scheme, v1.URISchemeHTTP},
		{"serviceAccountName", pod.Spec.ServiceAccountName, "default"},
		{"serviceAccount mirrored", pod.Spec.DeprecatedServiceAccount, "default"},
	}
	for _, ch := range checks {
		if ch.got != ch.want {
			t.Errorf("%s = %v, want %v", ch.name, ch.got, ch.want)
		}
	}
}

func TestSetDefaultsVolumeWithoutSource(t *testing.T) {
	pod := validPod()
	pod.Spec.Volumes = []v1.Volume{{Name: "scratch"}}
	SetDefaults(pod)
	if pod.Spec.Volumes[0].EmptyDir == nil {
		t.Fatalf("a volume naming no source: %+v, want an emptyDir", pod.Spec.Volumes[0])
	}
	if err := ValidatePod(pod); err != nil {
		t.Fatal(err)
	}
}

func TestSetDefaultsServiceAccount(t *testing.T) {
	for _, tt := range []struct{ name, deprecated, want string }{
		{"", "", "default"},
		{"builder", "", "builder"},
		{"", "legacy", "legacy"},
		{"builder", "legacy", "builder"},
	} {
		pod := validPod()
		pod.Spec.ServiceAccountName, pod.Spec.DeprecatedServiceAccount = tt.name, tt.deprecated
		SetDefaults(pod)
		if pod.Spec.ServiceAccountName != tt.want || pod.Spec.DeprecatedServiceAccount != tt.want {
			t.Errorf("serviceAccountName %q, serviceAccount %q: defaulted to %q and %q, want %q for both",
				tt.name, tt.deprecated, pod.Spec.ServiceAccountName, pod.Spec.DeprecatedServiceAccount, tt.want)
		}
	}
}
