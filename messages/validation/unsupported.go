package validation

import (
	"reflect"
	"strings"

	v1 "k8s.io/api/core/v1"
	"k8s.io/apimachinery/pkg/util/validation/field"
)

// validateUnsupported rejects the PodSpec fields actorlet cannot honour, each
// with its reason, rather than running the pod differently from what it
// asks (README.md, "PodSpec fields", lists every field).
func validateUnsupported(spec *v1.PodSpec, path *field.Path) field.ErrorList {
	var errs field.ErrorList
	forbid := func(name, why string) {
		errs = append(errs, field.Forbidden(path.Child(name), why))
	}
	errs = append(errs, validateEphemeral(spec, path.Child("ephemeralContainers"))...)
	if len(spec.HostAliases) > 0 {
		forbid("hostAliases", "not supported: actorlet does not manage the pod's /etc/hosts")
	}
	if spec.RuntimeClassName != nil && *spec.RuntimeClassName != "" {
		forbid("runtimeClassName", "not supported: there are no RuntimeClass objects to resolve a runtime handler (the node's default handler would silently be used)")
	}
	if len(spec.ResourceClaims) > 0 {
		forbid("resourceClaims", "not supported: dynamic resource allocation needs an API server and DRA drivers")
	}
	if len(spec.SchedulingGates) > 0 {
		forbid("schedulingGates", "not supported: there is no scheduler to remove the gates, so the pod would never start")
	}
	if spec.HostUsers != nil && !*spec.HostUsers {
		forbid("hostUsers", "false (a user namespace) is not supported")
	}
	if spec.Resources != nil && (len(spec.Resources.Limits) > 0 || len(spec.Resources.Requests) > 0 || len(spec.Resources.Claims) > 0) {
		forbid("resources", "pod-level resources are not supported: set them per container")
	}
	if spec.HostnameOverride != nil {
		forbid("hostnameOverride", "not supported")
	}
	if spec.SetHostnameAsFQDN != nil && *spec.SetHostnameAsFQDN {
		forbid("setHostnameAsFQDN", "not supported: there is no cluster domain")
	}
	if spec.OS != nil && spec.OS.Name != v1.Linux {
		errs = append(errs, field.NotSupported(path.Child("os", "name"), spec.OS.Name, []v1.OSName{v1.Linux}))
	}
	if spec.DNSPolicy == v1.DNSNone && spec.DNSConfig == nil {
		errs = append(errs, field.Required(path.Child("dnsConfig"), "must provide `dnsConfig` when `dnsPolicy` is None"))
	}
	if a := spec.Affinity; a != nil {
		if a.PodAffinity != nil && len(a.PodAffinity.RequiredDuringSchedulingIgnoredDuringExecution) > 0 {
			forbid("affinity.podAffinity", "required pod affinity is not supported: a node cannot see other nodes' pods (preferred terms are ignored)")
		}
		if a.PodAntiAffinity != nil && len(a.PodAntiAffinity.RequiredDuringSchedulingIgnoredDuringExecution) > 0 {
			forbid("affinity.podAntiAffinity", "required pod anti-affinity is not supported: a node cannot see other nodes' pods (preferred terms are ignored)")
		}
	}
	// containers[].resizePolicy is accepted: with no in-place resize, a
	// change of resources restarts the container (what RestartContainer
	// asks for; NotRequired cannot be honoured and restarts too).
	errs = append(errs, unsupportedNewFields(spec, path)...)
	errs = append(errs, unsupportedNested(spec, path)...)
	return errs
}

// unsupportedNested rejects the fields below the PodSpec that nothing on
// the node would honour (docs/podspec-fields.md lists every one walked).
func unsupportedNested(spec *v1.PodSpec, path *field.Path) field.ErrorList {
	var errs field.ErrorList
	for i := range spec.InitContainers {
		errs = append(errs, unsupportedInContainer(&spec.InitContainers[i], path.Child("initContainers").Index(i))...)
	}
	for i := range spec.Containers {
		errs = append(errs, unsupportedInContainer(&spec.Containers[i], path.Child("containers").Index(i))...)
	}
	for i := range spec.EphemeralContainers {
		c := v1.Container(spec.EphemeralContainers[i].EphemeralContainerCommon)
		errs = append(errs, unsupportedInContainer(&c, path.Child("ephemeralContainers").Index(i))...)
	}
	for i := range spec.Volumes {
		errs = append(errs, unsupportedVolume(&spec.Volumes[i], path.Child("volumes").Index(i))...)
	}
	for i, vol := range spec.Volumes {
		if vol.EmptyDir != nil && vol.EmptyDir.Mode != nil {
			errs = append(errs, field.Forbidden(path.Child("volumes").Index(i).Child("emptyDir", "mode"),
				"not supported: an emptyDir is created with mode 0777 (alpha field EmptyDirVolumeMode)"))
		}
	}
	if sc := spec.SecurityContext; sc != nil && sc.SupplementalGroupsPolicy != nil && *sc.SupplementalGroupsPolicy != v1.SupplementalGroupsPolicyMerge {
		errs = append(errs, field.NotSupported(path.Child("securityContext", "supplementalGroupsPolicy"), *sc.SupplementalGroupsPolicy,
			[]v1.SupplementalGroupsPolicy{v1.SupplementalGroupsPolicyMerge}))
	}
	return errs
}

// Volume sources and projected volume sources a node sets up itself.
var (
	supportedVolumes     = map[string]bool{"hostPath": true, "emptyDir": true, "configMap": true, "secret": true, "downwardAPI": true, "projected": true}
	supportedProjections = map[string]bool{"configMap": true, "secret": true, "downwardAPI": true}
)

// unsupportedVolume checks a volume names one source (as the API server)
// and one the node can set up: no persistent volumes or volume plugins, no
// service account tokens or trust bundles (there is no API server). A
// volume type added to the API is refused until it is supported.
func unsupportedVolume(vol *v1.Volume, path *field.Path) field.ErrorList {
	var errs field.ErrorList
	sources := setPointerFields(vol.VolumeSource)
	switch {
	case len(sources) == 0:
		return append(errs, field.Required(path, "must specify a volume type"))
	case len(sources) > 1:
		errs = append(errs, field.Forbidden(path, "may not specify more than 1 volume type"))
	}
	for _, name := range sources {
		if !supportedVolumes[name] {
			errs = append(errs, field.Forbidden(path.Child(name),
				"not supported: a node alone sets up hostPath, emptyDir, configMap, secret, downwardAPI and projected volumes (no persistent volumes or volume plugins)"))
		}
	}
	if vol.Projected != nil {
		for j, src := range vol.Projected.Sources {
			for _, name := range setPointerFields(src) {
				if !supportedProjections[name] {
					errs = append(errs, field.Forbidden(path.Child("projected", "sources").Index(j).Child(name),
						"not supported: projected volumes take configMap, secret and downwardAPI sources (there is no API server to issue tokens or bundles)"))
				}
			}
		}
	}
	return errs
}

// setPointerFields names (by JSON name) the pointer fields of struct v that
// are set.
func setPointerFields(v any) []string {
	rv := reflect.ValueOf(v)
	var out []string
	for i := range rv.NumField() {
		if f := rv.Field(i); f.Kind() == reflect.Pointer && !f.IsNil() {
			out = append(out, strings.Split(rv.Type().Field(i).Tag.Get("json"), ",")[0])
		}
	}
	return out
}

// unsupportedInContainer: the container fields no runtime path honours.
func unsupportedInContainer(c *v1.Container, path *field.Path) field.ErrorList {
	var errs field.ErrorList
	if len(c.RestartPolicyRules) > 0 {
		errs = append(errs, field.Forbidden(path.Child("restartPolicyRules"),
			"not supported: per-exit-code container restart rules (alpha) are not implemented; the pod's restartPolicy applies"))
	}
	if len(c.VolumeDevices) > 0 {
		errs = append(errs, field.Forbidden(path.Child("volumeDevices"), "not supported: raw block devices need persistent volume claims, which a node alone has not"))
	}
	for i, e := range c.Env {
		if e.ValueFrom != nil && e.ValueFrom.FileKeyRef != nil {
			errs = append(errs, field.Forbidden(path.Child("env").Index(i).Child("valueFrom", "fileKeyRef"),
				"not supported: environment variables from a file in a volume (alpha) are not implemented"))
		}
	}
	for i, m := range c.VolumeMounts {
		p := path.Child("volumeMounts").Index(i)
		if m.MountPropagation != nil && *m.MountPropagation != v1.MountPropagationNone {
			errs = append(errs, field.NotSupported(p.Child("mountPropagation"), *m.MountPropagation, []v1.MountPropagationMode{v1.MountPropagationNone}))
		}
		if m.RecursiveReadOnly != nil && *m.RecursiveReadOnly == v1.RecursiveReadOnlyEnabled {
			errs = append(errs, field.NotSupported(p.Child("recursiveReadOnly"), *m.RecursiveReadOnly,
				[]v1.RecursiveReadOnlyMode{v1.RecursiveReadOnlyDisabled, v1.RecursiveReadOnlyIfPossible}))
		}
		if m.SubPathExpr != "" {
			errs = append(errs, field.Forbidden(p.Child("subPathExpr"), "not supported: use subPath"))
		}
		if len(m.BindMountOptions) > 0 {
			errs = append(errs, field.Forbidden(p.Child("bindMountOptions"), "not supported (alpha)"))
		}
	}
	return errs
}

// unsupportedNewFields: alpha fields of recent Kubernetes versions that
// act through controllers actorlet does not have.
func unsupportedNewFields(spec *v1.PodSpec, path *field.Path) field.ErrorList {
	var errs field.ErrorList
	if spec.SchedulingGroup != nil {
		errs = append(errs, field.Forbidden(path.Child("schedulingGroup"), "not supported: group scheduling needs the scheduler"))
	}
	if len(spec.EvictionResponders) > 0 {
		errs = append(errs, field.Forbidden(path.Child("evictionResponders"), "not supported: eviction requests need the API server"))
	}
	return errs
}

// MaxEphemeralContainers bounds the debug containers of one pod.
const MaxEphemeralContainers = 32

// validateEphemeral checks ephemeral (debug) containers as the API server
// does: unique names among all containers, an image, and none of the
// fields that make no sense for a container that runs once (ports,
// probes, lifecycle, resources, restartPolicy). A targetContainerName must
// name a regular or init container.
func validateEphemeral(spec *v1.PodSpec, path *field.Path) field.ErrorList {
	var errs field.ErrorList
	if len(spec.EphemeralContainers) > MaxEphemeralContainers {
		return append(errs, field.TooMany(path, len(spec.EphemeralContainers), MaxEphemeralContainers))
	}
	names := map[string]bool{}
	for _, c := range spec.InitContainers {
		names[c.Name] = true
	}
	for _, c := range spec.Containers {
		names[c.Name] = true
	}
	for i := range spec.EphemeralContainers {
		e := &spec.EphemeralContainers[i]
		p := path.Index(i)
		switch {
		case e.Name == "":
			errs = append(errs, field.Required(p.Child("name"), ""))
		case names[e.Name]:
			errs = append(errs, field.Duplicate(p.Child("name"), e.Name))
		}
		errs = append(errs, dnsLabel(p.Child("name"), e.Name)...)
		names[e.Name] = true
		if e.Image == "" {
			errs = append(errs, field.Required(p.Child("image"), ""))
		}
		for name, set := range map[string]bool{
			"ports": len(e.Ports) > 0, "livenessProbe": e.LivenessProbe != nil, "readinessProbe": e.ReadinessProbe != nil,
			"startupProbe": e.StartupProbe != nil, "lifecycle": e.Lifecycle != nil, "restartPolicy": e.RestartPolicy != nil,
			"resources": len(e.Resources.Limits) > 0 || len(e.Resources.Requests) > 0,
		} {
			if set {
				errs = append(errs, field.Forbidden(p.Child(name), "cannot be set for an ephemeral container"))
			}
		}
		if t := e.TargetContainerName; t != "" && !names[t] {
			errs = append(errs, field.NotFound(p.Child("targetContainerName"), t))
		}
	}
	return errs
}
