package validation

import (
	"fmt"
	"strings"
	"testing"

	v1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
)

func limitsPod() *v1.Pod {
	p := &v1.Pod{
		ObjectMeta: metav1.ObjectMeta{Name: "p", Namespace: "default"},
		Spec:       v1.PodSpec{Containers: []v1.Container{{Name: "c", Image: "img"}}},
	}
	SetDefaults(p)
	return p
}

func TestTooManyContainers(t *testing.T) {
	p := limitsPod()
	p.Spec.Containers = nil
	for i := 0; i < 1000; i++ {
		p.Spec.Containers = append(p.Spec.Containers, v1.Container{Name: fmt.Sprintf("c%d", i), Image: "img"})
	}
	SetDefaults(p)
	err := ValidatePod(p)
	if err == nil || !strings.Contains(err.Error(), "spec.containers") || !strings.Contains(err.Error(), "MaxContainersPerPod") {
		t.Fatalf("ValidatePod of 1,000 containers = %v, want a spec.containers error naming MaxContainersPerPod", err)
	}
	p.Spec.Containers = p.Spec.Containers[:MaxContainersPerPod-1]
	p.Spec.InitContainers = []v1.Container{{Name: "init", Image: "img"}}
	SetDefaults(p)
	if err := ValidatePod(p); err != nil {
		t.Fatalf("ValidatePod of %d containers = %v", MaxContainersPerPod, err)
	}
}

func TestPodTooLarge(t *testing.T) {
	data := []byte(`{"metadata":{"name":"big","annotations":{"a":"` + strings.Repeat("x", MaxPodBytes) + `"}},"spec":{"containers":[{"name":"c","image":"i"}]}}`)
	_, err := DecodePod(data)
	if err == nil || !strings.Contains(err.Error(), "MaxPodBytes") {
		t.Fatalf("DecodePod of %d bytes = %v, want an error naming MaxPodBytes", len(data), err)
	}
}

func TestMetadataLimits(t *testing.T) {
	p := limitsPod()
	p.Annotations = map[string]string{"big": strings.Repeat("a", 300<<10)}
	p.Labels = map[string]string{"bad label": "x"}
	err := ValidatePod(p)
	if err == nil || !strings.Contains(err.Error(), "metadata.annotations") || !strings.Contains(err.Error(), "metadata.labels") {
		t.Fatalf("ValidatePod = %v, want metadata.annotations (too long) and metadata.labels errors", err)
	}
}

// TestHugeValueNotEchoed: a 1 MB name is rejected with an error that
// quotes only its start.
func TestHugeValueNotEchoed(t *testing.T) {
	p := limitsPod()
	p.Name = strings.Repeat("n", 1<<20)
	err := ValidatePod(p)
	if err == nil || !strings.Contains(err.Error(), "metadata.name") {
		t.Fatalf("ValidatePod = %v", err)
	}
	if n := len(err.Error()); n > 4096 {
		t.Errorf("error message is %d bytes, want the name cut (<= 4 KiB)", n)
	}
}
