//go:build e2e

package e2e

import (
	"fmt"
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"

	v1 "k8s.io/api/core/v1"
)

// Scenario: real-world Pod YAML on containerd. A sidecar starts before the
// app and stops after it; a ConfigMap from the bus is mounted (a real bind
// mount of the atomic writer's directory), an update reaches the running
// container's files without a restart; a Secret reaches env and a file;
// a termination message is read from the file mounted at
// terminationMessagePath.
func TestPodYAMLSidecarAndObjects(t *testing.T) {
	a := startAgent(t, agentOptions{})
	host := t.TempDir()
	if err := os.Chmod(host, 0o777); err != nil {
		t.Fatal(err)
	}
	objs := filepath.Join(t.TempDir(), "objs.yaml")
	write := func(greeting string) {
		y := fmt.Sprintf(`apiVersion: v1
kind: ConfigMap
metadata: {name: cfg, namespace: %[1]s}
data: {greeting: %[2]s}
---
apiVersion: v1
kind: Secret
metadata: {name: creds, namespace: %[1]s}
stringData: {password: pw-e2e}
`, namespace, greeting)
		if err := os.WriteFile(objs, []byte(y), 0o644); err != nil {
			t.Fatal(err)
		}
		a.mustCtl(t, "apply", "-f", objs)
	}
	write("hello")
	t.Cleanup(func() {
		a.ctl("delete", "configmap", "cfg", "-n", namespace)
		a.ctl("delete", "secret", "creds", "-n", namespace)
	})

	always := v1.ContainerRestartPolicyAlways
	loop := func(name, extra string) string {
		return fmt.Sprintf("trap 'echo %[1]s stop >> /host/order; exit 0' TERM; echo %[1]s start >> /host/order; while true; do %[2]s sleep 0.5; done", name, extra)
	}
	pod := shPod("sidecar-cfg", loop("app", `cat /etc/config/greeting; echo " $PASSWORD $(cat /etc/creds/password)";`))
	pod.Spec.InitContainers = []v1.Container{shContainer("logger", loop("logger", ""))}
	pod.Spec.InitContainers[0].RestartPolicy = &always
	withHostDir(pod, host)
	pod.Spec.InitContainers[0].VolumeMounts = pod.Spec.Containers[0].VolumeMounts
	pod.Spec.Volumes = append(pod.Spec.Volumes,
		v1.Volume{Name: "config", VolumeSource: v1.VolumeSource{ConfigMap: &v1.ConfigMapVolumeSource{LocalObjectReference: v1.LocalObjectReference{Name: "cfg"}}}},
		v1.Volume{Name: "creds", VolumeSource: v1.VolumeSource{Secret: &v1.SecretVolumeSource{SecretName: "creds"}}})
	c := &pod.Spec.Containers[0]
	c.VolumeMounts = append(c.VolumeMounts, v1.VolumeMount{Name: "config", MountPath: "/etc/config"}, v1.VolumeMount{Name: "creds", MountPath: "/etc/creds"})
	c.Env = []v1.EnvVar{{Name: "PASSWORD", ValueFrom: &v1.EnvVarSource{SecretKeyRef: &v1.SecretKeySelector{LocalObjectReference: v1.LocalObjectReference{Name: "creds"}, Key: "password"}}}}
	grace := int64(10)
	pod.Spec.TerminationGracePeriodSeconds = &grace

	msg := shPod("term-msg", "echo 'finished: 42 rows' > /dev/termination-log; exit 3")
	msg.Spec.RestartPolicy = v1.RestartPolicyNever
	a.apply(t, pod, msg)

	p := a.waitPod(t, "sidecar-cfg", 90*time.Second, isRunning)
	firstID := containerStatus(p, "main").ContainerID
	if b, _ := os.ReadFile(filepath.Join(host, "order")); !strings.HasPrefix(string(b), "logger start\napp start\n") {
		t.Errorf("start order: %q, want the sidecar first", b)
	}
	logHas := func(s string) func() error {
		return func() error {
			out, _, err := a.ctl("logs", "sidecar-cfg", "-n", namespace, "--tail", "3")
			if err != nil {
				return err
			}
			if !strings.Contains(out, s) {
				return fmt.Errorf("log %q lacks %q", out, s)
			}
			return nil
		}
	}
	eventually(t, 30*time.Second, logHas("hello pw-e2e pw-e2e"))

	start := time.Now()
	write("bonjour")
	eventually(t, 60*time.Second, logHas("bonjour pw-e2e"))
	t.Logf("ConfigMap update seen inside the container after %s", time.Since(start).Round(100*time.Millisecond))
	p = a.waitPod(t, "sidecar-cfg", 10*time.Second, isRunning)
	if cs := containerStatus(p, "main"); cs.ContainerID != firstID || cs.RestartCount != 0 {
		t.Errorf("the ConfigMap update restarted the app: %+v", cs)
	}

	m := a.waitPod(t, "term-msg", 60*time.Second, hasPhase(v1.PodFailed))
	if cs := containerStatus(m, "main"); cs.State.Terminated == nil || cs.State.Terminated.Message != "finished: 42 rows\n" {
		t.Errorf("termination message: %+v", cs.State)
	}

	a.mustCtl(t, "delete", "pod", "sidecar-cfg", "-n", namespace, "--node", a.node)
	eventually(t, 60*time.Second, func() error {
		b, _ := os.ReadFile(filepath.Join(host, "order"))
		if !strings.HasSuffix(string(b), "app stop\nlogger stop\n") {
			return fmt.Errorf("order %q: want the app to stop before the sidecar", b)
		}
		return nil
	})
}
