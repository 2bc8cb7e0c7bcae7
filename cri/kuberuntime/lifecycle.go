package kuberuntime

import (
	"context"
	"fmt"
	"io"
	"net"
	"net/http"
	"net/url"
	"sort"
	"strconv"
	"time"

	v1 "k8s.io/api/core/v1"
	"k8s.io/apimachinery/pkg/types"
	"k8s.io/apimachinery/pkg/util/intstr"
	runtimeapi "k8s.io/cri-api/pkg/apis/runtime/v1"

	"github.com/actorlet/actorlet/messages/seconds"
)

// maxHookOutput bounds how much hook output ends up in a failure message.
const maxHookOutput = 1024

// runHook runs a lifecycle handler (exec, httpGet or sleep) against the
// container until it finishes or ctx ends. It returns a message describing
// the failure.
func (m *Manager) runHook(ctx context.Context, pod *v1.Pod, podUID types.UID, containerID string, c *v1.Container, h *v1.LifecycleHandler) (string, error) {
	switch {
	case h.Exec != nil:
		timeout := time.Duration(0)
		if d, ok := ctx.Deadline(); ok {
			timeout = max(time.Until(d), time.Second)
		}
		stdout, stderr, err := m.rt.ExecSync(ctx, containerID, h.Exec.Command, timeout)
		if err != nil {
			out := truncate(string(stdout)+string(stderr), maxHookOutput)
			return fmt.Sprintf("Exec lifecycle hook (%v) for Container %q in Pod %q failed - error: %v, message: %q", h.Exec.Command, c.Name, podName(pod, podUID), err, out),
				fmt.Errorf("exec hook %v: %w", h.Exec.Command, err)
		}
		return "", nil
	case h.HTTPGet != nil:
		if err := m.runHTTPHook(ctx, pod, podUID, c, h.HTTPGet); err != nil {
			return fmt.Sprintf("HTTP lifecycle hook (%s) for Container %q in Pod %q failed - error: %v", h.HTTPGet.Path, c.Name, podName(pod, podUID), err), err
		}
		return "", nil
	case h.Sleep != nil:
		select {
		case <-m.opts.Clock.After(seconds.Duration(h.Sleep.Seconds)):
			return "", nil
		case <-ctx.Done():
			return "", nil // the grace period ended: sleeping is not a failure
		}
	}
	return "Lifecycle hook has no handler", fmt.Errorf("lifecycle handler of container %q: no exec, httpGet or sleep action", c.Name)
}

func podName(pod *v1.Pod, uid types.UID) string {
	if pod == nil {
		return string(uid)
	}
	return pod.Namespace + "/" + pod.Name
}

func truncate(s string, n int) string {
	if len(s) <= n {
		return s
	}
	return s[:n] + "…"
}

func (m *Manager) runHTTPHook(ctx context.Context, pod *v1.Pod, podUID types.UID, c *v1.Container, g *v1.HTTPGetAction) error {
	host := g.Host
	if host == "" {
		ip, err := m.podIP(ctx, pod, podUID)
		if err != nil {
			return err
		}
		host = ip
	}
	port, err := resolvePort(g.Port, c)
	if err != nil {
		return err
	}
	scheme := "http"
	if g.Scheme == v1.URISchemeHTTPS {
		scheme = "https"
	}
	u := &url.URL{Scheme: scheme, Host: net.JoinHostPort(host, strconv.Itoa(port))}
	if ref, err := url.Parse(g.Path); err == nil {
		u.Path, u.RawQuery = ref.Path, ref.RawQuery
	}
	req, err := http.NewRequestWithContext(ctx, http.MethodGet, u.String(), nil)
	if err != nil {
		return fmt.Errorf("build hook request %s: %w", u, err)
	}
	for _, hdr := range g.HTTPHeaders {
		if hdr.Name == "Host" {
			req.Host = hdr.Value
			continue
		}
		req.Header.Add(hdr.Name, hdr.Value)
	}
	resp, err := m.opts.HTTPClient.Do(req)
	if err != nil {
		return fmt.Errorf("http hook GET %s: %w", u, err)
	}
	defer resp.Body.Close()
	_, _ = io.Copy(io.Discard, io.LimitReader(resp.Body, 64<<10))
	if resp.StatusCode < 200 || resp.StatusCode >= 400 {
		return fmt.Errorf("http hook GET %s: status %d", u, resp.StatusCode)
	}
	return nil
}

// resolvePort turns a numeric or named port of c into a number.
func resolvePort(p intstr.IntOrString, c *v1.Container) (int, error) {
	if p.Type == intstr.Int {
		if p.IntVal <= 0 || p.IntVal > 65535 {
			return 0, fmt.Errorf("port %d: out of range 1-65535", p.IntVal)
		}
		return int(p.IntVal), nil
	}
	if n, err := strconv.Atoi(p.StrVal); err == nil && n > 0 && n <= 65535 {
		return n, nil
	}
	for _, cp := range c.Ports {
		if cp.Name == p.StrVal {
			return int(cp.ContainerPort), nil
		}
	}
	return 0, fmt.Errorf("port %q: no container port of that name", p.StrVal)
}

// podIP is the address hooks reach the pod at: the host IP for host-network
// pods, else the IP of the newest ready sandbox.
func (m *Manager) podIP(ctx context.Context, pod *v1.Pod, uid types.UID) (string, error) {
	if pod != nil && pod.Spec.HostNetwork {
		return m.opts.HostIP, nil
	}
	sandboxes, err := m.rt.ListPodSandbox(ctx, &runtimeapi.PodSandboxFilter{
		LabelSelector: map[string]string{LabelPodUID: string(uid)},
		State:         &runtimeapi.PodSandboxStateValue{State: runtimeapi.PodSandboxState_SANDBOX_READY},
	})
	if err != nil {
		return "", fmt.Errorf("find pod IP: %w", err)
	}
	sort.Slice(sandboxes, func(i, j int) bool { return sandboxes[i].CreatedAt > sandboxes[j].CreatedAt })
	for _, s := range sandboxes {
		st, err := m.rt.PodSandboxStatus(ctx, s.Id, false)
		if err != nil {
			return "", fmt.Errorf("find pod IP: sandbox %q status: %w", s.Id, err)
		}
		if ips := sandboxIPs(st.GetStatus()); len(ips) > 0 {
			return ips[0], nil
		}
		if st.GetStatus().GetLinux().GetNamespaces().GetOptions().GetNetwork() == runtimeapi.NamespaceMode_NODE {
			return m.opts.HostIP, nil
		}
	}
	return "", fmt.Errorf("find pod IP: pod has no ready sandbox with an IP")
}
