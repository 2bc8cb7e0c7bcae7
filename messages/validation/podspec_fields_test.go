package validation

import (
	"os"
	"reflect"
	"regexp"
	"strings"
	"testing"

	v1 "k8s.io/api/core/v1"
	"k8s.io/apimachinery/pkg/api/resource"
)

// TestPodSpecFieldsTable walks v1.PodSpec: every field must have one row
// in the README's table, and every field the table calls rejected must be
// refused by validation with an error on that field.
func TestPodSpecFieldsTable(t *testing.T) {
	status := fieldTable(t, "../../README.md", "podspec-fields", "[A-Za-z]+")
	ty := reflect.TypeOf(v1.PodSpec{})
	fields := map[string]bool{}
	for i := range ty.NumField() {
		name := strings.Split(ty.Field(i).Tag.Get("json"), ",")[0]
		fields[name] = true
		if _, ok := status[name]; !ok {
			t.Errorf("PodSpec field %q has no row in README.md's PodSpec table: say whether it is supported, ignored or rejected (and reject it in validation if it cannot be honoured)", name)
		}
	}
	checkRows(t, "README.md", "a PodSpec field", status, fields, func(name string) (func(*v1.Pod) string, bool) {
		set, ok := rejectedSetters[name]
		return func(p *v1.Pod) string {
			set(&p.Spec)
			return "spec." + name
		}, ok
	})
	// partly-supported fields with a rejected part.
	pod := fieldsTestPod()
	pod.Spec.Affinity = &v1.Affinity{PodAntiAffinity: &v1.PodAntiAffinity{RequiredDuringSchedulingIgnoredDuringExecution: []v1.PodAffinityTerm{{TopologyKey: "zone"}}}}
	if err := ValidatePod(pod); err == nil || !strings.Contains(err.Error(), "spec.affinity.podAntiAffinity") {
		t.Errorf("required pod anti-affinity: %v", err)
	}
	pod = fieldsTestPod()
	pod.Spec.OS = &v1.PodOS{Name: v1.Windows}
	if err := ValidatePod(pod); err == nil || !strings.Contains(err.Error(), "spec.os.name") {
		t.Errorf("windows: %v", err)
	}
}

// checkRows checks the rows of doc's field table (status: field → its
// status): each names a field walked (fields, what names them), and each
// rejected one has a setter (setterOf) making a test pod that validation
// refuses with an error on the path the setter returns.
func checkRows(t *testing.T, doc, what string, status map[string]string, fields map[string]bool, setterOf func(name string) (func(*v1.Pod) string, bool)) {
	t.Helper()
	for name, st := range status {
		if !fields[name] {
			t.Errorf("%s lists %q, which is not %s", doc, name, what)
		}
		if st != "rejected" {
			continue
		}
		set, ok := setterOf(name)
		if !ok {
			t.Errorf("rejected field %q: no setter in this test to check validation refuses it", name)
			continue
		}
		pod := fieldsTestPod()
		want := set(pod)
		if verr := ValidatePod(pod); verr == nil || !strings.Contains(verr.Error(), want) {
			t.Errorf("rejected field %q: validation = %v, want an error on %s", name, verr, want)
		}
	}
}

// TestNestedFieldsTable walks the types below the PodSpec where a field
// could be silently ignored: every field must have a row in
// docs/podspec-fields.md, and every rejected one must be refused by
// validation on its path.
func TestNestedFieldsTable(t *testing.T) {
	status := fieldTable(t, "../../docs/podspec-fields.md", "nested-fields", "[A-Za-z]+\\.[A-Za-z]+")
	fields := map[string]bool{}
	for _, v := range []any{v1.Container{}, v1.EnvVarSource{}, v1.VolumeMount{}, v1.EmptyDirVolumeSource{}, v1.PodSecurityContext{}, v1.SecurityContext{},
		v1.VolumeSource{}, v1.VolumeProjection{}} {
		ty := reflect.TypeOf(v)
		for i := range ty.NumField() {
			name := ty.Name() + "." + strings.Split(ty.Field(i).Tag.Get("json"), ",")[0]
			fields[name] = true
			if _, ok := status[name]; !ok {
				t.Errorf("field %s has no row in docs/podspec-fields.md: say whether it is supported, ignored or rejected (and reject it in validation if nothing honours it)", name)
			}
		}
	}
	if !reflect.DeepEqual(jsonNames(reflect.TypeOf(v1.Container{})), jsonNames(reflect.TypeOf(v1.EphemeralContainerCommon{}))) {
		t.Error("ephemeral containers' fields differ from containers': give them their own rows")
	}
	checkRows(t, "docs/podspec-fields.md", "a walked field", status, fields, func(name string) (func(*v1.Pod) string, bool) {
		if set, ok := nestedRejectedSetters[name]; ok {
			return set, true
		}
		return sourceSetter(name)
	})
	// partly-supported fields: the supported values pass, the others are refused.
	for _, tc := range []struct {
		name string
		set  func(*v1.Pod)
		want string // "" when valid
	}{
		{"emptyDir in memory with a size limit", func(p *v1.Pod) {
			size := resource.MustParse("64Mi")
			p.Spec.Volumes = []v1.Volume{{Name: "cache", VolumeSource: v1.VolumeSource{EmptyDir: &v1.EmptyDirVolumeSource{Medium: v1.StorageMediumMemory, SizeLimit: &size}}}}
		}, ""},
		{"recursiveReadOnly IfPossible", func(p *v1.Pod) {
			mount(p, func(m *v1.VolumeMount) { r := v1.RecursiveReadOnlyIfPossible; m.RecursiveReadOnly = &r })
		}, ""},
		{"recursiveReadOnly Enabled", func(p *v1.Pod) {
			mount(p, func(m *v1.VolumeMount) { r := v1.RecursiveReadOnlyEnabled; m.RecursiveReadOnly = &r })
		},
			"spec.containers[0].volumeMounts[0].recursiveReadOnly"},
		{"mountPropagation None", func(p *v1.Pod) {
			mount(p, func(m *v1.VolumeMount) { r := v1.MountPropagationNone; m.MountPropagation = &r })
		}, ""},
		{"mountPropagation Bidirectional", func(p *v1.Pod) {
			mount(p, func(m *v1.VolumeMount) { r := v1.MountPropagationBidirectional; m.MountPropagation = &r })
		}, "spec.containers[0].volumeMounts[0].mountPropagation"},
		{"supplementalGroupsPolicy Merge", func(p *v1.Pod) { m := v1.SupplementalGroupsPolicyMerge; psc(p).SupplementalGroupsPolicy = &m }, ""},
		{"supplementalGroupsPolicy Strict", func(p *v1.Pod) { m := v1.SupplementalGroupsPolicyStrict; psc(p).SupplementalGroupsPolicy = &m },
			"spec.securityContext.supplementalGroupsPolicy"},
		{"rules on an ephemeral container", func(p *v1.Pod) {
			p.Spec.EphemeralContainers = []v1.EphemeralContainer{{EphemeralContainerCommon: v1.EphemeralContainerCommon{Name: "debug", Image: "busybox",
				RestartPolicyRules: []v1.ContainerRestartRule{{Action: v1.ContainerRestartRuleActionRestart}}}}}
		}, "spec.ephemeralContainers[0].restartPolicyRules"},
	} {
		pod := fieldsTestPod()
		tc.set(pod)
		err := ValidatePod(pod)
		if (err == nil) != (tc.want == "") || (err != nil && !strings.Contains(err.Error(), tc.want)) {
			t.Errorf("%s: validation = %v, want %q", tc.name, err, tc.want)
		}
	}
}

// fieldTable reads the status of each field (rows "| `name` | status |")
// between the <!-- marker:begin --> and <!-- marker:end --> lines of file;
// name matches the regexp name.
func fieldTable(t *testing.T, file, marker, name string) map[string]string {
	t.Helper()
	data, err := os.ReadFile(file)
	if err != nil {
		t.Fatal(err)
	}
	doc := string(data)
	begin, end := strings.Index(doc, "<!-- "+marker+":begin -->"), strings.Index(doc, "<!-- "+marker+":end -->")
	if begin < 0 || end < begin {
		t.Fatalf("%s has no %s table", file, marker)
	}
	row := regexp.MustCompile("(?m)^\\| `(" + name + ")` \\| (supported|partly|ignored|rejected) \\|")
	status := map[string]string{}
	for _, m := range row.FindAllStringSubmatch(doc[begin:end], -1) {
		if _, dup := status[m[1]]; dup {
			t.Errorf("field %s has two rows in %s", m[1], file)
		}
		status[m[1]] = m[2]
	}
	return status
}

// sourceSetter sets the volume source or projected source name
// ("VolumeSource.nfs") to its zero value, for the rejected ones.
func sourceSetter(name string) (func(*v1.Pod) string, bool) {
	kind, field, _ := strings.Cut(name, ".")
	set := func(v reflect.Value) bool {
		for i := range v.NumField() {
			if strings.Split(v.Type().Field(i).Tag.Get("json"), ",")[0] == field {
				v.Field(i).Set(reflect.New(v.Field(i).Type().Elem()))
				return true
			}
		}
		return false
	}
	switch kind {
	case "VolumeSource":
		return func(p *v1.Pod) string {
			var src v1.VolumeSource
			set(reflect.ValueOf(&src).Elem())
			p.Spec.Volumes = []v1.Volume{{Name: "v", VolumeSource: src}}
			return "spec.volumes[0]." + field
		}, true
	case "VolumeProjection":
		return func(p *v1.Pod) string {
			var src v1.VolumeProjection
			set(reflect.ValueOf(&src).Elem())
			p.Spec.Volumes = []v1.Volume{{Name: "v", VolumeSource: v1.VolumeSource{Projected: &v1.ProjectedVolumeSource{Sources: []v1.VolumeProjection{src}}}}}
			return "spec.volumes[0].projected.sources[0]." + field
		}, true
	}
	return nil, false
}

func jsonNames(ty reflect.Type) []string {
	var out []string
	for i := range ty.NumField() {
		out = append(out, strings.Split(ty.Field(i).Tag.Get("json"), ",")[0])
	}
	return out
}

// mount gives the test pod an emptyDir mounted in its container, then
// edits the mount.
func mount(p *v1.Pod, edit func(*v1.VolumeMount)) {
	p.Spec.Volumes = append(p.Spec.Volumes, v1.Volume{Name: "data", VolumeSource: v1.VolumeSource{EmptyDir: &v1.EmptyDirVolumeSource{}}})
	m := v1.VolumeMount{Name: "data", MountPath: "/data", ReadOnly: true}
	edit(&m)
	p.Spec.Containers[0].VolumeMounts = append(p.Spec.Containers[0].VolumeMounts, m)
}

func psc(p *v1.Pod) *v1.PodSecurityContext {
	if p.Spec.SecurityContext == nil {
		p.Spec.SecurityContext = &v1.PodSecurityContext{}
	}
	return p.Spec.SecurityContext
}

// nestedRejectedSetters set a rejected nested field and return the path
// validation must name.
var nestedRejectedSetters = map[string]func(*v1.Pod) string{
	"Container.restartPolicyRules": func(p *v1.Pod) string {
		p.Spec.InitContainers = []v1.Container{{Name: "init", Image: "busybox", ImagePullPolicy: v1.PullAlways,
			TerminationMessagePolicy: v1.TerminationMessageReadFile,
			RestartPolicyRules:       []v1.ContainerRestartRule{{Action: v1.ContainerRestartRuleActionRestart}}}}
		return "spec.initContainers[0].restartPolicyRules"
	},
	"Container.volumeDevices": func(p *v1.Pod) string {
		p.Spec.Containers[0].VolumeDevices = []v1.VolumeDevice{{Name: "disk", DevicePath: "/dev/xvda"}}
		return "spec.containers[0].volumeDevices"
	},
	"EnvVarSource.fileKeyRef": func(p *v1.Pod) string {
		p.Spec.Containers[0].Env = []v1.EnvVar{{Name: "A", ValueFrom: &v1.EnvVarSource{FileKeyRef: &v1.FileKeySelector{VolumeName: "cfg", Path: "env", Key: "A"}}}}
		return "spec.containers[0].env[0].valueFrom.fileKeyRef"
	},
	"VolumeMount.subPathExpr": func(p *v1.Pod) string {
		mount(p, func(m *v1.VolumeMount) { m.SubPathExpr = "$(POD_NAME)" })
		return "spec.containers[0].volumeMounts[0].subPathExpr"
	},
	"VolumeMount.bindMountOptions": func(p *v1.Pod) string {
		mount(p, func(m *v1.VolumeMount) { m.BindMountOptions = []string{"nosuid"} })
		return "spec.containers[0].volumeMounts[0].bindMountOptions"
	},
	"EmptyDirVolumeSource.mode": func(p *v1.Pod) string {
		mode := int32(0o700)
		p.Spec.Volumes = []v1.Volume{{Name: "scratch", VolumeSource: v1.VolumeSource{EmptyDir: &v1.EmptyDirVolumeSource{Mode: &mode}}}}
		return "spec.volumes[0].emptyDir.mode"
	},
}

func fieldsTestPod() *v1.Pod {
	pod := &v1.Pod{}
	pod.Name, pod.Namespace = "p", "default"
	pod.Spec.Containers = []v1.Container{{Name: "c", Image: "busybox"}}
	SetDefaults(pod)
	return pod
}

var (
	yes, no = true, false
	handler = "gvisor"
)

var rejectedSetters = map[string]func(*v1.PodSpec){
	"hostAliases":       func(s *v1.PodSpec) { s.HostAliases = []v1.HostAlias{{IP: "10.0.0.1", Hostnames: []string{"db"}}} },
	"runtimeClassName":  func(s *v1.PodSpec) { s.RuntimeClassName = &handler },
	"setHostnameAsFQDN": func(s *v1.PodSpec) { s.SetHostnameAsFQDN = &yes },
	"hostUsers":         func(s *v1.PodSpec) { s.HostUsers = &no },
	"schedulingGates":   func(s *v1.PodSpec) { s.SchedulingGates = []v1.PodSchedulingGate{{Name: "wait"}} },
	"resourceClaims":    func(s *v1.PodSpec) { s.ResourceClaims = []v1.PodResourceClaim{{Name: "gpu"}} },
	"resources": func(s *v1.PodSpec) {
		s.Resources = &v1.ResourceRequirements{Limits: v1.ResourceList{v1.ResourceCPU: resource.MustParse("1")}}
	},
	"hostnameOverride":   func(s *v1.PodSpec) { h := "x"; s.HostnameOverride = &h },
	"schedulingGroup":    func(s *v1.PodSpec) { s.SchedulingGroup = &v1.PodSchedulingGroup{} },
	"evictionResponders": func(s *v1.PodSpec) { s.EvictionResponders = []v1.EvictionResponder{{}} },
}
