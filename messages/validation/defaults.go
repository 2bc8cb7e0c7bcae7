package validation

import (
	"strings"

	v1 "k8s.io/api/core/v1"

	"github.com/actorlet/actorlet/messages/podrules"
)

// Defaults the API server would fill in, as the kubelet expects them.
const (
	DefaultNamespace = "default"
	// DefaultServiceAccountName is the service account of a pod that
	// names none.
	DefaultServiceAccountName = "default"
)

// SetDefaults fills in the fields an operator may leave out. It only sets
// zero values, so it is idempotent and never hides an explicit bad value
// (a negative period stays negative and ValidatePod reports it).
func SetDefaults(pod *v1.Pod) {
	if pod.APIVersion == "" && pod.Kind == "" {
		pod.APIVersion, pod.Kind = "v1", "Pod"
	}
	if pod.Namespace == "" {
		pod.Namespace = DefaultNamespace
	}
	spec := &pod.Spec
	if spec.RestartPolicy == "" {
		spec.RestartPolicy = v1.RestartPolicyAlways
	}
	if spec.DNSPolicy == "" {
		spec.DNSPolicy = v1.DNSClusterFirst
	}
	if spec.TerminationGracePeriodSeconds == nil {
		g := podrules.DefaultGracePeriodSeconds
		spec.TerminationGracePeriodSeconds = &g
	}
	if spec.SchedulerName == "" {
		spec.SchedulerName = v1.DefaultSchedulerName
	}
	defaultServiceAccount(spec)
	for i := range spec.Volumes {
		// A volume naming no source is an emptyDir, as the API server has it.
		if len(setPointerFields(spec.Volumes[i].VolumeSource)) == 0 {
			spec.Volumes[i].EmptyDir = &v1.EmptyDirVolumeSource{}
		}
	}
	for i := range spec.InitContainers {
		defaultContainer(&spec.InitContainers[i])
	}
	for i := range spec.Containers {
		defaultContainer(&spec.Containers[i])
	}
}

// defaultServiceAccount names the service account as the API server does:
// the deprecated serviceAccount stands in for an empty serviceAccountName,
// then "default" (the ServiceAccount admission plugin), and serviceAccount
// mirrors the result.
func defaultServiceAccount(spec *v1.PodSpec) {
	if spec.ServiceAccountName == "" {
		spec.ServiceAccountName = spec.DeprecatedServiceAccount
	}
	if spec.ServiceAccountName == "" {
		spec.ServiceAccountName = DefaultServiceAccountName
	}
	spec.DeprecatedServiceAccount = spec.ServiceAccountName
}

func defaultContainer(c *v1.Container) {
	if c.ImagePullPolicy == "" {
		c.ImagePullPolicy = defaultPullPolicy(c.Image)
	}
	if c.TerminationMessagePath == "" {
		c.TerminationMessagePath = v1.TerminationMessagePathDefault
	}
	if c.TerminationMessagePolicy == "" {
		c.TerminationMessagePolicy = v1.TerminationMessageReadFile
	}
	for i := range c.Ports {
		if c.Ports[i].Protocol == "" {
			c.Ports[i].Protocol = v1.ProtocolTCP
		}
	}
	for _, p := range []*v1.Probe{c.LivenessProbe, c.ReadinessProbe, c.StartupProbe} {
		defaultProbe(p)
	}
}

// defaultPullPolicy is Always for an untagged or :latest image, otherwise
// IfNotPresent, as the API server decides.
func defaultPullPolicy(image string) v1.PullPolicy {
	if strings.Contains(image, "@") {
		return v1.PullIfNotPresent
	}
	name := image
	if i := strings.LastIndex(name, "/"); i >= 0 {
		name = name[i+1:]
	}
	tag := ""
	if i := strings.LastIndex(name, ":"); i >= 0 {
		tag = name[i+1:]
	}
	if tag == "" || tag == "latest" {
		return v1.PullAlways
	}
	return v1.PullIfNotPresent
}

func defaultProbe(p *v1.Probe) {
	if p == nil {
		return
	}
	if p.PeriodSeconds == 0 {
		p.PeriodSeconds = podrules.DefaultProbePeriodSeconds
	}
	if p.TimeoutSeconds == 0 {
		p.TimeoutSeconds = podrules.DefaultProbeTimeoutSeconds
	}
	if p.SuccessThreshold == 0 {
		p.SuccessThreshold = podrules.DefaultProbeSuccessThreshold
	}
	if p.FailureThreshold == 0 {
		p.FailureThreshold = podrules.DefaultProbeFailureThreshold
	}
	if p.HTTPGet != nil && p.HTTPGet.Scheme == "" {
		p.HTTPGet.Scheme = v1.URISchemeHTTP
	}
	if p.HTTPGet != nil && p.HTTPGet.Path == "" {
		p.HTTPGet.Path = "/"
	}
}
