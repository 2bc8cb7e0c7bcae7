//go:build e2e

package e2e

import (
	"fmt"
	"net"
	"strings"
	"testing"
	"time"

	v1 "k8s.io/api/core/v1"
)

// Scenario 1: 30 pods applied at once on the pod network all run, each with
// its own IP from the CNI bridge; logs and exec work.
func TestManyPodsRunWithPodIPsLogsAndExec(t *testing.T) {
	a := startAgent(t, agentOptions{})
	const n = 30
	var pods []*v1.Pod
	for i := 0; i < n; i++ {
		name := fmt.Sprintf("many-%02d", i)
		pods = append(pods, shPod(name, "echo hello from $HOSTNAME; sleep 3600"))
	}
	start := time.Now()
	a.apply(t, pods...)

	var all map[string]*v1.Pod
	eventually(t, 3*time.Minute, func() error {
		var err error
		if all, err = a.pods(); err != nil {
			return err
		}
		running := 0
		for _, p := range pods {
			if s := all[p.Name]; s != nil && isRunning(s) == nil && s.Status.PodIP != "" {
				running++
			}
		}
		if running != n {
			return fmt.Errorf("%d of %d pods running with an IP", running, n)
		}
		return nil
	})
	t.Logf("%d pods running in %s", n, time.Since(start).Round(time.Millisecond))

	_, bridge, err := net.ParseCIDR(ctrd.Subnet)
	if err != nil {
		t.Fatalf("setup's pod subnet: %v", err)
	}
	seen := map[string]string{}
	for _, p := range pods {
		s := all[p.Name]
		ip := net.ParseIP(s.Status.PodIP)
		if ip == nil || !bridge.Contains(ip) {
			t.Errorf("pod %s: podIP %q, want an address in %s", p.Name, s.Status.PodIP, bridge)
		}
		if other, dup := seen[s.Status.PodIP]; dup {
			t.Errorf("pods %s and %s share IP %s", other, p.Name, s.Status.PodIP)
		}
		seen[s.Status.PodIP] = p.Name
		if len(s.Status.PodIPs) == 0 || s.Status.PodIPs[0].IP != s.Status.PodIP {
			t.Errorf("pod %s: podIPs %v, want [%s]", p.Name, s.Status.PodIPs, s.Status.PodIP)
		}
		if s.Status.HostIP != "127.0.0.1" {
			t.Errorf("pod %s: hostIP %q, want the node IP 127.0.0.1", p.Name, s.Status.HostIP)
		}
	}

	// The table shows them too.
	wide := a.mustCtl(t, "get", "pods", "-n", namespace, "-o", "wide")
	if got := strings.Count(wide, "Running"); got != n {
		t.Errorf("get pods -o wide shows %d Running rows, want %d:\n%s", got, n, wide)
	}

	// logs: the container's stdout, hostname being the pod name.
	for _, name := range []string{"many-00", "many-17", "many-29"} {
		eventually(t, 10*time.Second, func() error {
			out, _, err := a.ctl("logs", name, "-n", namespace)
			if err != nil {
				return err
			}
			if want := "hello from " + name; !strings.Contains(out, want) {
				return fmt.Errorf("logs %s = %q, want %q", name, out, want)
			}
			return nil
		})
	}

	// exec: runs inside the container's network namespace and reports the
	// command's exit code.
	p := all["many-05"]
	out := a.mustCtl(t, "exec", "many-05", "-n", namespace, "--", "sh", "-c", "echo $((6*7)); hostname; ip addr 2>/dev/null || ifconfig")
	if !strings.Contains(out, "42") || !strings.Contains(out, "many-05") || !strings.Contains(out, p.Status.PodIP) {
		t.Errorf("exec output %q: want 42, the hostname many-05 and the pod IP %s", out, p.Status.PodIP)
	}
	_, _, err = a.ctl("exec", "many-05", "-n", namespace, "--", "sh", "-c", "echo oops >&2; exit 3")
	if err == nil || !strings.Contains(err.Error(), "exit status 3") {
		t.Errorf("exec of a command exiting 3: err %v, want exit status 3", err)
	}
}
