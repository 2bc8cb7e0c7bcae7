package main

import (
	"strings"
	"testing"

	v1 "k8s.io/api/core/v1"
)

func TestParseWaitFor(t *testing.T) {
	for in, want := range map[string]string{
		"": forAuto, "auto": forAuto, "ready": forReady, "condition=Ready": forReady, "Running": forRunning,
		"jsonpath={.status.phase}=Running": forRunning, "completed": forCompleted, "jsonpath={.status.phase}=Succeeded": forCompleted,
		"delete": forDeleted,
	} {
		if got, err := parseWaitFor(in); err != nil || got != want {
			t.Errorf("parseWaitFor(%q) = %q, %v; want %q", in, got, err, want)
		}
	}
	if _, err := parseWaitFor("condition=Exploded"); err == nil || !strings.Contains(err.Error(), `--for "condition=Exploded": want auto, ready`) {
		t.Errorf("a hostile --for: %v", err)
	}
}

// The state --wait waits for fits the pod, and each state is judged as
// kubectl users expect.
func TestWaitTargetAndOutcome(t *testing.T) {
	pod := func(policy v1.RestartPolicy) *v1.Pod { return &v1.Pod{Spec: v1.PodSpec{RestartPolicy: policy}} }
	for policy, want := range map[v1.RestartPolicy]string{"": forReady, v1.RestartPolicyAlways: forReady, v1.RestartPolicyOnFailure: forCompleted, v1.RestartPolicyNever: forCompleted} {
		if got := waitTarget(pod(policy), forAuto); got != want {
			t.Errorf("waitTarget(%q, auto) = %q, want %q", policy, got, want)
		}
	}
	if got := waitTarget(pod(v1.RestartPolicyNever), forRunning); got != forRunning {
		t.Errorf("--for running is kept: %q", got)
	}
	yes := true
	st := func(phase v1.PodPhase, ready bool) *v1.Pod {
		p := &v1.Pod{Spec: v1.PodSpec{Containers: []v1.Container{{Name: "app"}}}}
		p.Status.Phase = phase
		p.Status.ContainerStatuses = []v1.ContainerStatus{{Name: "app", Ready: ready, Started: &yes, State: v1.ContainerState{Running: &v1.ContainerStateRunning{}}}}
		return p
	}
	for _, tc := range []struct {
		name   string
		pod    *v1.Pod
		target string
		want   string
	}{
		{"running, not ready: ready waits", st(v1.PodRunning, false), forReady, ""},
		{"running, not ready: running is done", st(v1.PodRunning, false), forRunning, "done"},
		{"ready", st(v1.PodRunning, true), forReady, "done"},
		{"running job: completed waits", st(v1.PodRunning, true), forCompleted, ""},
		{"succeeded job", st(v1.PodSucceeded, false), forCompleted, "done"},
		{"failed job", st(v1.PodFailed, false), forCompleted, "failed"},
		{"completed before ready", st(v1.PodSucceeded, false), forReady, "failed"},
	} {
		if got, why := podOutcome(tc.pod, tc.target); got != tc.want {
			t.Errorf("%s: podOutcome = %q (%s), want %q", tc.name, got, why, tc.want)
		}
	}
}

// kubectl refuses a manifest without apiVersion or kind; so does apply.
func TestTypeMetaError(t *testing.T) {
	for doc, want := range map[string]string{
		"apiVersion: v1\nkind: Pod\nmetadata: {name: a}\n": "",
		"kind: Pod\nmetadata: {name: a}\n":                 "apiVersion not set (add apiVersion: v1)",
		"apiVersion: v1\nmetadata: {name: a}\n":            "kind not set (add kind: Pod, ConfigMap or Secret)",
		"apiVersion: v1\nkind: ''\n":                       "kind not set",
		"apiVersion: 3\nkind: Pod\n":                       "apiVersion not set",
		"":                                                 "", // empty documents are skipped
		"--- just a string":                                "", // left to the decoders
		strings.Repeat("#", maxTypeMetaBytes+1):            "", // over every limit: the decoders refuse it
	} {
		err := typeMetaError([]byte(doc))
		switch {
		case want == "" && err != nil:
			t.Errorf("%.40q: %v, want none", doc, err)
		case want != "" && (err == nil || !strings.Contains(err.Error(), want)):
			t.Errorf("%.40q: %v, want %q", doc, err, want)
		}
	}
}
