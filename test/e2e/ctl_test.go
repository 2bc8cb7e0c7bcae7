//go:build e2e

package e2e

import (
	"bytes"
	"context"
	"encoding/json"
	"fmt"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"testing"
	"time"

	v1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"

	"github.com/actorlet/actorlet/test/testutil"
)

// ctlBusArgs are actorletctl's arguments for the agent's bus: the server
// and, on the embedded server, the operator credentials the node wrote.
func (a *agent) ctlBusArgs() []string {
	args := []string{"--server", a.natsURL()}
	if a.opts.natsURL == "" {
		args = append(args, "--creds", filepath.Join(a.rootDir, "auth", "admin.creds"))
	}
	return args
}

// ctl runs the real actorletctl against the agent's bus.
func (a *agent) ctl(args ...string) (stdout, stderr string, err error) {
	ctx, cancel := context.WithTimeout(context.Background(), 60*time.Second)
	defer cancel()
	cmd := exec.CommandContext(ctx, ctlBin, append(a.ctlBusArgs(), args...)...)
	var o, e bytes.Buffer
	cmd.Stdout, cmd.Stderr = &o, &e
	err = cmd.Run()
	if err != nil {
		err = fmt.Errorf("actorletctl %s: %w: %s", strings.Join(args, " "), err, strings.TrimSpace(e.String()))
	}
	return o.String(), e.String(), err
}

// mustCtl is ctl failing t on an error.
func (a *agent) mustCtl(t *testing.T, args ...string) string {
	t.Helper()
	out, _, err := a.ctl(args...)
	if err != nil {
		t.Fatal(err)
	}
	return out
}

// apply writes pods to files and applies them with `actorletctl apply -f DIR`.
func (a *agent) apply(t *testing.T, pods ...*v1.Pod) {
	t.Helper()
	dir := t.TempDir()
	for _, p := range pods {
		b, err := json.Marshal(p)
		if err != nil {
			t.Fatalf("encode pod %s: %v", p.Name, err)
		}
		if err := os.WriteFile(filepath.Join(dir, p.Name+".json"), b, 0o644); err != nil {
			t.Fatal(err)
		}
	}
	a.mustCtl(t, "apply", "-f", dir, "--node", a.node)
}

// pods lists the run's pods by name, from `actorletctl get pods -o json`.
func (a *agent) pods() (map[string]*v1.Pod, error) {
	out, _, err := a.ctl("get", "pods", "-n", namespace, "-o", "json")
	if err != nil {
		return nil, err
	}
	var list struct {
		Items []*v1.Pod `json:"items"`
	}
	if err := json.Unmarshal([]byte(out), &list); err != nil {
		return nil, fmt.Errorf("decode get pods output: %w", err)
	}
	pods := make(map[string]*v1.Pod, len(list.Items))
	for _, p := range list.Items {
		pods[p.Name] = p
	}
	return pods, nil
}

// waitPod polls the pod's status until cond holds and returns that status.
func (a *agent) waitPod(t *testing.T, name string, timeout time.Duration, cond func(*v1.Pod) error) *v1.Pod {
	t.Helper()
	return testutil.WaitPod(t, timeout, 200*time.Millisecond, func() (*v1.Pod, error) {
		pods, err := a.pods()
		if err != nil {
			return nil, err
		}
		if p := pods[name]; p != nil {
			return p, nil
		}
		return nil, fmt.Errorf("pod %s has no status yet", name)
	}, cond)
}

// Conditions for waitPod.

func isRunning(p *v1.Pod) error {
	if p.Status.Phase != v1.PodRunning {
		return fmt.Errorf("phase %s, want Running", p.Status.Phase)
	}
	for _, cs := range p.Status.ContainerStatuses {
		if cs.State.Running == nil {
			return fmt.Errorf("container %s not running", cs.Name)
		}
	}
	return nil
}

func isReady(p *v1.Pod) error {
	if err := isRunning(p); err != nil {
		return err
	}
	if testutil.PodCondition(p, v1.PodReady) != v1.ConditionTrue {
		return fmt.Errorf("not Ready")
	}
	return nil
}

func hasPhase(phase v1.PodPhase) func(*v1.Pod) error {
	return func(p *v1.Pod) error {
		if p.Status.Phase != phase {
			return fmt.Errorf("phase %s, want %s", p.Status.Phase, phase)
		}
		return nil
	}
}

// containerStatus returns the named container's status (app or init).
func containerStatus(p *v1.Pod, name string) *v1.ContainerStatus {
	for _, list := range [][]v1.ContainerStatus{p.Status.ContainerStatuses, p.Status.InitContainerStatuses} {
		for i := range list {
			if list[i].Name == name {
				return &list[i]
			}
		}
	}
	return nil
}

// shPod is a pod of the run with one busybox container "main" running script.
func shPod(name, script string) *v1.Pod {
	grace := int64(2)
	return &v1.Pod{
		TypeMeta: metav1.TypeMeta{APIVersion: "v1", Kind: "Pod"},
		ObjectMeta: metav1.ObjectMeta{
			Name: name, Namespace: namespace,
			Labels: map[string]string{"actorlet.io/e2e-run": runID},
		},
		Spec: v1.PodSpec{
			TerminationGracePeriodSeconds: &grace,
			Containers:                    []v1.Container{shContainer("main", script)},
		},
	}
}

func shContainer(name, script string) v1.Container {
	return v1.Container{
		Name: name, Image: busyboxImage, ImagePullPolicy: v1.PullIfNotPresent,
		Command: []string{"sh", "-c", script},
	}
}
