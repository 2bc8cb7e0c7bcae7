package validation

import (
	"fmt"
	"strings"

	v1 "k8s.io/api/core/v1"
	"k8s.io/apimachinery/pkg/util/intstr"
	"k8s.io/apimachinery/pkg/util/sets"
	utilvalidation "k8s.io/apimachinery/pkg/util/validation"
	"k8s.io/apimachinery/pkg/util/validation/field"
)

// ValidatePod checks a pod after SetDefaults and returns every problem
// found, each naming its field path (for example
// `spec.containers[0].image: Required value`), or nil. The returned error,
// when not nil, is a field.ErrorList aggregate; use Errors to get the list.
func ValidatePod(pod *v1.Pod) error {
	if pod == nil {
		return fmt.Errorf("pod is nil")
	}
	errs := Errors(pod)
	if len(errs) == 0 {
		return nil
	}
	return errs.ToAggregate()
}

// Errors returns the field problems of a defaulted pod.
func Errors(pod *v1.Pod) field.ErrorList {
	var errs field.ErrorList
	errs = append(errs, validateMeta(pod, field.NewPath("metadata"))...)
	errs = append(errs, validateSpec(&pod.Spec, field.NewPath("spec"))...)
	errs = append(errs, validateLimits(pod)...)
	return shortenValues(errs)
}

func validateMeta(pod *v1.Pod, path *field.Path) field.ErrorList {
	var errs field.ErrorList
	if pod.Name == "" {
		errs = append(errs, field.Required(path.Child("name"), "a pod needs a name"))
	} else {
		errs = append(errs, invalidEach(path.Child("name"), pod.Name, utilvalidation.IsDNS1123Subdomain(pod.Name))...)
	}
	if pod.Namespace == "" {
		errs = append(errs, field.Required(path.Child("namespace"), "call SetDefaults to use \"default\""))
	} else {
		errs = append(errs, invalidEach(path.Child("namespace"), pod.Namespace, utilvalidation.IsDNS1123Label(pod.Namespace))...)
	}
	if g := pod.DeletionGracePeriodSeconds; g != nil && *g < 0 {
		errs = append(errs, field.Invalid(path.Child("deletionGracePeriodSeconds"), *g, "must be >= 0"))
	}
	return errs
}

var restartPolicies = []v1.RestartPolicy{v1.RestartPolicyAlways, v1.RestartPolicyOnFailure, v1.RestartPolicyNever}

func validateSpec(spec *v1.PodSpec, path *field.Path) field.ErrorList {
	var errs field.ErrorList
	if len(spec.Containers) == 0 {
		errs = append(errs, field.Required(path.Child("containers"), "a pod needs at least one container"))
	}
	switch spec.RestartPolicy {
	case v1.RestartPolicyAlways, v1.RestartPolicyOnFailure, v1.RestartPolicyNever:
	case "":
		errs = append(errs, field.Required(path.Child("restartPolicy"), "call SetDefaults to use Always"))
	default:
		errs = append(errs, field.NotSupported(path.Child("restartPolicy"), spec.RestartPolicy, restartPolicies))
	}
	if g := spec.TerminationGracePeriodSeconds; g != nil && *g < 0 {
		errs = append(errs, field.Invalid(path.Child("terminationGracePeriodSeconds"), *g, "must be >= 0"))
	}
	if d := spec.ActiveDeadlineSeconds; d != nil && *d <= 0 {
		errs = append(errs, field.Invalid(path.Child("activeDeadlineSeconds"), *d, "must be > 0"))
	}
	errs = append(errs, validateUnsupported(spec, path)...)
	errs = append(errs, validateGroups(spec.SecurityContext, path.Child("securityContext"))...)

	volumes := sets.New[string]()
	for i, vol := range spec.Volumes {
		p := path.Child("volumes").Index(i).Child("name")
		errs = append(errs, dnsLabel(p, vol.Name)...)
		if volumes.Has(vol.Name) {
			errs = append(errs, field.Duplicate(p, vol.Name))
		}
		volumes.Insert(vol.Name)
	}

	names := sets.New[string]()
	for i := range spec.InitContainers {
		c := &spec.InitContainers[i]
		p := path.Child("initContainers").Index(i)
		errs = append(errs, validateContainer(c, p, names, volumes)...)
		if c.RestartPolicy != nil && *c.RestartPolicy != v1.ContainerRestartPolicyAlways {
			errs = append(errs, field.NotSupported(p.Child("restartPolicy"), *c.RestartPolicy,
				[]v1.ContainerRestartPolicy{v1.ContainerRestartPolicyAlways}))
		}
		sidecar := c.RestartPolicy != nil
		if !sidecar && (c.LivenessProbe != nil || c.ReadinessProbe != nil || c.StartupProbe != nil) {
			errs = append(errs, field.Forbidden(p, "probes are only allowed on regular and sidecar (restartPolicy: Always) containers"))
		}
	}
	for i := range spec.Containers {
		c := &spec.Containers[i]
		p := path.Child("containers").Index(i)
		errs = append(errs, validateContainer(c, p, names, volumes)...)
		if c.RestartPolicy != nil {
			errs = append(errs, field.Forbidden(p.Child("restartPolicy"), "only init containers may set a restartPolicy"))
		}
	}
	return errs
}

// MaxSupplementalGroups bounds a pod's supplementalGroups, fsGroup
// included (the process runtime's limit; NGROUPS_MAX is 65536).
const MaxSupplementalGroups = 64

// validateGroups checks the pod's group IDs as the API server does (0 to
// 2^31-1) and bounds their count.
func validateGroups(sc *v1.PodSecurityContext, path *field.Path) field.ErrorList {
	if sc == nil {
		return nil
	}
	var errs field.ErrorList
	n := len(sc.SupplementalGroups)
	if sc.FSGroup != nil {
		n++
		errs = append(errs, invalidEach(path.Child("fsGroup"), *sc.FSGroup, utilvalidation.IsValidGroupID(*sc.FSGroup))...)
	}
	if n > MaxSupplementalGroups {
		return append(errs, field.TooMany(path.Child("supplementalGroups"), n, MaxSupplementalGroups))
	}
	for i, g := range sc.SupplementalGroups {
		errs = append(errs, invalidEach(path.Child("supplementalGroups").Index(i), g, utilvalidation.IsValidGroupID(g))...)
	}
	return errs
}

// validateContainer checks one container; names collects container names
// across init and regular containers so duplicates are reported.
func validateContainer(c *v1.Container, path *field.Path, names, volumes sets.Set[string]) field.ErrorList {
	var errs field.ErrorList
	namePath := path.Child("name")
	if c.Name == "" {
		errs = append(errs, field.Required(namePath, ""))
	} else {
		errs = append(errs, dnsLabel(namePath, c.Name)...)
		if names.Has(c.Name) {
			errs = append(errs, field.Duplicate(namePath, c.Name))
		}
		names.Insert(c.Name)
	}
	if len(c.Image) == 0 || c.Image != strings.TrimSpace(c.Image) {
		if c.Image == "" {
			errs = append(errs, field.Required(path.Child("image"), ""))
		} else {
			errs = append(errs, field.Invalid(path.Child("image"), c.Image, "must not have leading or trailing whitespace"))
		}
	}
	switch c.ImagePullPolicy {
	case v1.PullAlways, v1.PullIfNotPresent, v1.PullNever:
	default:
		errs = append(errs, field.NotSupported(path.Child("imagePullPolicy"), c.ImagePullPolicy,
			[]v1.PullPolicy{v1.PullAlways, v1.PullIfNotPresent, v1.PullNever}))
	}
	for i, e := range c.Env {
		errs = append(errs, invalidEach(path.Child("env").Index(i).Child("name"), e.Name, utilvalidation.IsEnvVarName(e.Name))...)
	}
	for i, m := range c.VolumeMounts {
		p := path.Child("volumeMounts").Index(i)
		if !volumes.Has(m.Name) {
			errs = append(errs, field.NotFound(p.Child("name"), m.Name))
		}
		if m.MountPath == "" {
			errs = append(errs, field.Required(p.Child("mountPath"), ""))
		}
	}
	switch c.TerminationMessagePolicy {
	case v1.TerminationMessageReadFile, v1.TerminationMessageFallbackToLogsOnError:
	default:
		errs = append(errs, field.NotSupported(path.Child("terminationMessagePolicy"), c.TerminationMessagePolicy,
			[]v1.TerminationMessagePolicy{v1.TerminationMessageReadFile, v1.TerminationMessageFallbackToLogsOnError}))
	}
	if p := c.TerminationMessagePath; p != "" && !strings.HasPrefix(p, "/") {
		errs = append(errs, field.Invalid(path.Child("terminationMessagePath"), p, "must be an absolute path"))
	}
	errs = append(errs, validatePorts(c.Ports, path.Child("ports"))...)
	errs = append(errs, validateResources(&c.Resources, path.Child("resources"))...)
	errs = append(errs, validateProbe(c.LivenessProbe, path.Child("livenessProbe"), true)...)
	errs = append(errs, validateProbe(c.ReadinessProbe, path.Child("readinessProbe"), false)...)
	errs = append(errs, validateProbe(c.StartupProbe, path.Child("startupProbe"), true)...)
	return errs
}

func validatePorts(ports []v1.ContainerPort, path *field.Path) field.ErrorList {
	var errs field.ErrorList
	names := sets.New[string]()
	for i, port := range ports {
		p := path.Index(i)
		if port.Name != "" {
			errs = append(errs, invalidEach(p.Child("name"), port.Name, utilvalidation.IsValidPortName(port.Name))...)
			if names.Has(port.Name) {
				errs = append(errs, field.Duplicate(p.Child("name"), port.Name))
			}
			names.Insert(port.Name)
		}
		errs = append(errs, invalidEach(p.Child("containerPort"), port.ContainerPort, utilvalidation.IsValidPortNum(int(port.ContainerPort)))...)
		if port.HostPort != 0 {
			errs = append(errs, invalidEach(p.Child("hostPort"), port.HostPort, utilvalidation.IsValidPortNum(int(port.HostPort)))...)
		}
		switch port.Protocol {
		case v1.ProtocolTCP, v1.ProtocolUDP, v1.ProtocolSCTP:
		default:
			errs = append(errs, field.NotSupported(p.Child("protocol"), port.Protocol,
				[]v1.Protocol{v1.ProtocolTCP, v1.ProtocolUDP, v1.ProtocolSCTP}))
		}
	}
	return errs
}

func validateResources(r *v1.ResourceRequirements, path *field.Path) field.ErrorList {
	var errs field.ErrorList
	check := func(list v1.ResourceList, p *field.Path) {
		for name, q := range list {
			np := p.Key(string(name))
			errs = append(errs, invalidEach(np, string(name), utilvalidation.IsQualifiedName(string(name)))...)
			if q.Sign() < 0 {
				errs = append(errs, field.Invalid(np, q.String(), "must be greater than or equal to 0"))
			}
		}
	}
	check(r.Limits, path.Child("limits"))
	check(r.Requests, path.Child("requests"))
	for name, req := range r.Requests {
		limit, ok := r.Limits[name]
		if ok && req.Cmp(limit) > 0 {
			errs = append(errs, field.Invalid(path.Child("requests").Key(string(name)), req.String(),
				fmt.Sprintf("must be less than or equal to %s limit of %s", name, limit.String())))
		}
	}
	return errs
}

func validateProbe(probe *v1.Probe, path *field.Path, mustSucceedOnce bool) field.ErrorList {
	if probe == nil {
		return nil
	}
	var errs field.ErrorList
	handlers := 0
	h := probe.ProbeHandler
	if h.Exec != nil {
		handlers++
		if len(h.Exec.Command) == 0 {
			errs = append(errs, field.Required(path.Child("exec", "command"), ""))
		}
	}
	if h.HTTPGet != nil {
		handlers++
		errs = append(errs, validateProbePort(h.HTTPGet.Port, path.Child("httpGet", "port"))...)
		switch h.HTTPGet.Scheme {
		case v1.URISchemeHTTP, v1.URISchemeHTTPS:
		default:
			errs = append(errs, field.NotSupported(path.Child("httpGet", "scheme"), h.HTTPGet.Scheme,
				[]v1.URIScheme{v1.URISchemeHTTP, v1.URISchemeHTTPS}))
		}
	}
	if h.TCPSocket != nil {
		handlers++
		errs = append(errs, validateProbePort(h.TCPSocket.Port, path.Child("tcpSocket", "port"))...)
	}
	if h.GRPC != nil {
		handlers++
		errs = append(errs, invalidEach(path.Child("grpc", "port"), h.GRPC.Port, utilvalidation.IsValidPortNum(int(h.GRPC.Port)))...)
	}
	switch {
	case handlers == 0:
		errs = append(errs, field.Required(path, "must specify a handler type (exec, httpGet, tcpSocket or grpc)"))
	case handlers > 1:
		errs = append(errs, field.Forbidden(path, "may not specify more than 1 handler type"))
	}
	if probe.InitialDelaySeconds < 0 {
		errs = append(errs, field.Invalid(path.Child("initialDelaySeconds"), probe.InitialDelaySeconds, "must be >= 0"))
	}
	for _, f := range []struct {
		name  string
		value int32
	}{
		{"periodSeconds", probe.PeriodSeconds},
		{"timeoutSeconds", probe.TimeoutSeconds},
		{"successThreshold", probe.SuccessThreshold},
		{"failureThreshold", probe.FailureThreshold},
	} {
		if f.value < 1 {
			errs = append(errs, field.Invalid(path.Child(f.name), f.value, "must be >= 1"))
		}
	}
	if mustSucceedOnce && probe.SuccessThreshold > 1 {
		errs = append(errs, field.Invalid(path.Child("successThreshold"), probe.SuccessThreshold, "must be 1"))
	}
	if g := probe.TerminationGracePeriodSeconds; g != nil && *g <= 0 {
		errs = append(errs, field.Invalid(path.Child("terminationGracePeriodSeconds"), *g, "must be > 0"))
	}
	if probe.TerminationGracePeriodSeconds != nil && !mustSucceedOnce {
		// As the API server: a failed readiness probe kills nothing.
		errs = append(errs, field.Forbidden(path.Child("terminationGracePeriodSeconds"), "must not be set for readinessProbes"))
	}
	return errs
}

func validateProbePort(port intstr.IntOrString, path *field.Path) field.ErrorList {
	var msgs []string
	if port.Type == intstr.String {
		msgs = utilvalidation.IsValidPortName(port.StrVal)
	} else {
		msgs = utilvalidation.IsValidPortNum(port.IntValue())
	}
	return invalidEach(path, port.String(), msgs)
}

func dnsLabel(path *field.Path, value string) field.ErrorList {
	return invalidEach(path, value, utilvalidation.IsDNS1123Label(value))
}
