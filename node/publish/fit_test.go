package publish

import (
	"encoding/json"
	"strings"
	"testing"
	"time"

	v1 "k8s.io/api/core/v1"
	"k8s.io/apimachinery/pkg/types"

	"github.com/actorlet/actorlet/messages"
	"github.com/actorlet/actorlet/messages/wire"
)

func TestFitStatusTruncatesTerminationMessagesAsTheKubelet(t *testing.T) {
	pod := statusPod("msgs", "u1", v1.PodFailed, "")
	pod.Spec.Containers = []v1.Container{{Name: "a"}, {Name: "b"}, {Name: "c"}}
	long := strings.Repeat("m", 20000)
	for _, name := range []string{"a", "b", "c"} {
		pod.Status.ContainerStatuses = append(pod.Status.ContainerStatuses, v1.ContainerStatus{
			Name:  name,
			State: v1.ContainerState{Terminated: &v1.ContainerStateTerminated{ExitCode: 1, Message: long}},
		})
	}
	data, err := FitStatus(pod, DefaultMaxPayload)
	if err != nil {
		t.Fatal(err)
	}
	var got v1.Pod
	if err := json.Unmarshal(data, &got); err != nil {
		t.Fatal(err)
	}
	for _, cs := range got.Status.ContainerStatuses {
		if n := len(cs.State.Terminated.Message); n != MaxPodTerminationMessageBytes/3 {
			t.Errorf("container %s: termination message of %d bytes, want %d (12 KiB shared by 3 containers)", cs.Name, n, MaxPodTerminationMessageBytes/3)
		}
	}
	if got.Annotations[TruncatedAnnotation] != "" {
		t.Errorf("a status that fits is marked truncated: %q", got.Annotations[TruncatedAnnotation])
	}
}

func TestFitStatusStages(t *testing.T) {
	const max = 64 << 10
	// A big spec: the spec is left out.
	big := statusPod("bigspec", "u1", v1.PodRunning, "")
	big.Annotations = map[string]string{"huge": strings.Repeat("a", 200<<10), StaticAnnotation: "true"}
	big.Spec.Containers = []v1.Container{{Name: "c", Image: "img", Args: []string{strings.Repeat("x", 100<<10)}}}
	// A big status: thousands of container statuses with long messages.
	wide := statusPod("bigstatus", "u2", v1.PodPending, "")
	for i := 0; i < 2000; i++ {
		wide.Status.ContainerStatuses = append(wide.Status.ContainerStatuses, v1.ContainerStatus{
			Name: strings.Repeat("c", 60), State: v1.ContainerState{Waiting: &v1.ContainerStateWaiting{Reason: "ContainerCreating", Message: strings.Repeat("w", 1000)}},
		})
	}
	for _, tc := range []struct {
		pod      *v1.Pod
		leftOut  string
		keepsCSs bool
	}{
		{big, "left out spec and annotations:", true},
		{wide, "left out everything but the pod's identity and phase", false},
	} {
		data, err := FitStatus(tc.pod.DeepCopy(), max)
		if err != nil {
			t.Fatal(err)
		}
		if len(data) > max-PayloadHeadroom {
			t.Errorf("%s: %d bytes, over the %d limit", tc.pod.Name, len(data), max)
		}
		var got v1.Pod
		if err := json.Unmarshal(data, &got); err != nil {
			t.Fatal(err)
		}
		if !strings.HasPrefix(got.Annotations[TruncatedAnnotation], tc.leftOut) {
			t.Errorf("%s: %s = %q, want it to start %q", tc.pod.Name, TruncatedAnnotation, got.Annotations[TruncatedAnnotation], tc.leftOut)
		}
		if got.Name != tc.pod.Name || got.UID != tc.pod.UID || got.Status.Phase != tc.pod.Status.Phase {
			t.Errorf("%s: identity or phase lost: %s %s %s", tc.pod.Name, got.Name, got.UID, got.Status.Phase)
		}
		if tc.pod.Annotations[StaticAnnotation] != "" && got.Annotations[StaticAnnotation] != "true" {
			t.Errorf("%s: static annotation lost", tc.pod.Name)
		}
	}
}

// TestOversizedStatusDoesNotBlockOthers: a pod whose status is larger than
// the server's max_payload is published truncated, and the pods queued
// behind it are published too (the write used to fail with "maximum
// payload exceeded" and go back to the head of the queue forever).
func TestOversizedStatusDoesNotBlockOthers(t *testing.T) {
	ts := startServerWith(t, func(o *serverOptions) { o.MaxPayload = 64 << 10 })
	_, js := ts.connect()
	kv := createBucket(t, js, wire.StatusBucket)
	p := newPublisher(t, StatusConfig{JS: js, NodeName: testNode})

	big := statusPod("big", "u1", v1.PodRunning, "")
	big.Annotations = map[string]string{"huge": strings.Repeat("a", 200<<10)}
	p.PodStatusChanged(messages.PodStatusChanged{Pod: big})
	for _, name := range []string{"small-1", "small-2"} {
		p.PodStatusChanged(messages.PodStatusChanged{Pod: statusPod(name, types.UID("u-"+name), v1.PodRunning, "")})
	}
	eventually(t, 10*time.Second, "the small pods' statuses behind the big one", func() bool {
		return getPod(t, kv, "small-1") != nil && getPod(t, kv, "small-2") != nil
	})
	got := getPod(t, kv, "big")
	if got == nil || got.Status.Phase != v1.PodRunning || got.Annotations[TruncatedAnnotation] == "" {
		t.Fatalf("big pod's status = %+v, want it published truncated", got)
	}
}
