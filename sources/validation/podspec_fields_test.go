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
	data, err := os.ReadFile("../../README.md")
	if err != nil {
		t.Fatal(err)
	}
	doc := string(data)
	begin, end := strings.Index(doc, "<!-- podspec-fields:begin -->"), strings.Index(doc, "<!-- podspec-fields:end -->")
	if begin < 0 || end < begin {
		t.Fatal("README.md has no podspec-fields table")
	}
	row := regexp.MustCompile("(?m)^\\| `([A-Za-z]+)` \\| (supported|partly|ignored|rejected) \\|")
	status := map[string]string{}
	for _, m := range row.FindAllStringSubmatch(doc[begin:end], -1) {
		if _, dup := status[m[1]]; dup {
			t.Errorf("field %s has two rows", m[1])
		}
		status[m[1]] = m[2]
	}
	ty := reflect.TypeOf(v1.PodSpec{})
	fields := map[string]bool{}
	for i := range ty.NumField() {
		name := strings.Split(ty.Field(i).Tag.Get("json"), ",")[0]
		fields[name] = true
		if _, ok := status[name]; !ok {
			t.Errorf("PodSpec field %q has no row in README.md's PodSpec table: say whether it is supported, ignored or rejected (and reject it in validation if it cannot be honoured)", name)
		}
	}
	for name, st := range status {
		if !fields[name] {
			t.Errorf("README.md lists %q, which is not a PodSpec field", name)
		}
		if st != "rejected" {
			continue
		}
		set, ok := rejectedSetters[name]
		if !ok {
			t.Errorf("rejected field %q: no setter in this test to check validation refuses it", name)
			continue
		}
		pod := fieldsTestPod()
		set(&pod.Spec)
		verr := ValidatePod(pod)
		if verr == nil || !strings.Contains(verr.Error(), "spec."+name) {
			t.Errorf("rejected field %q: validation = %v, want an error on spec.%s", name, verr, name)
		}
	}
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
