package probe

import (
	"context"
	"crypto/tls"
	"errors"
	"fmt"
	"io"
	"net"
	"net/http"
	"net/url"
	"strconv"
	"strings"
	"time"

	"github.com/actorlet/actorlet/messages"
	v1 "k8s.io/api/core/v1"
	"k8s.io/klog/v2"
)

const (
	// maxBody bounds the response body read and kept in the message.
	maxBody = 10 * 1024
	// maxRedirects bounds same-host redirects followed.
	maxRedirects = 10
	// UserAgent is sent unless the probe sets its own User-Agent header.
	UserAgent = "kube-probe/actorlet"
	// RedirectWarning starts the message of a success that stopped at a
	// redirect to another host.
	RedirectWarning = "Probe terminated redirects"
)

// NewHTTPRequest builds the GET request of an httpGet probe: scheme (HTTP
// when empty), host (the pod IP when empty), port (a number or a named port
// of the container), path and headers. A Host header sets the request's
// host, as in the kubelet.
func NewHTTPRequest(ctx context.Context, action *v1.HTTPGetAction, podIP string, container *v1.Container) (*http.Request, error) {
	if action == nil {
		return nil, fmt.Errorf("httpGet: must be set")
	}
	scheme := strings.ToLower(string(action.Scheme))
	if scheme == "" {
		scheme = "http"
	}
	if scheme != "http" && scheme != "https" {
		return nil, fmt.Errorf("httpGet.scheme: %q is not HTTP or HTTPS", action.Scheme)
	}
	host := action.Host
	if host == "" {
		host = podIP
	}
	if host == "" {
		return nil, fmt.Errorf("httpGet.host: empty and the pod has no IP yet")
	}
	port, err := ResolvePort(action.Port, container)
	if err != nil {
		return nil, fmt.Errorf("httpGet.%w", err)
	}
	path := action.Path
	if path != "" && !strings.HasPrefix(path, "/") {
		path = "/" + path
	}
	u, err := url.Parse(path)
	if err != nil {
		return nil, fmt.Errorf("httpGet.path: %q: %w", action.Path, err)
	}
	u.Scheme = scheme
	u.Host = net.JoinHostPort(host, strconv.Itoa(port))
	req, err := http.NewRequestWithContext(ctx, http.MethodGet, u.String(), nil)
	if err != nil {
		return nil, fmt.Errorf("httpGet: build request for %s: %w", u, err)
	}
	for _, h := range action.HTTPHeaders {
		if strings.EqualFold(h.Name, "Host") {
			req.Host = h.Value
			continue
		}
		if h.Name == "" {
			return nil, fmt.Errorf("httpGet.httpHeaders: header name must not be empty")
		}
		req.Header.Add(h.Name, h.Value)
	}
	if req.Header.Get("User-Agent") == "" {
		req.Header.Set("User-Agent", UserAgent)
	}
	if req.Header.Get("Accept") == "" {
		req.Header.Set("Accept", "*/*")
	}
	return req, nil
}

// HTTPGet runs an httpGet probe. 2xx and 3xx are Success; redirects to the
// same host are followed, a redirect elsewhere is not followed and counts as
// Success with a warning. Any other status, or a connection error or
// timeout, is Failure. The message carries the (truncated) body.
func HTTPGet(ctx context.Context, action *v1.HTTPGetAction, podIP string, container *v1.Container, timeout time.Duration) (messages.ProbeResult, string, error) {
	ctx, cancel := context.WithTimeout(ctx, timeout)
	defer cancel()
	req, err := NewHTTPRequest(ctx, action, podIP, container)
	if err != nil {
		return messages.ProbeUnknown, "", err
	}
	return DoHTTP(newHTTPClient(timeout), req)
}

// DoHTTP sends req with client and judges the response.
func DoHTTP(client *http.Client, req *http.Request) (messages.ProbeResult, string, error) {
	res, err := client.Do(req)
	if err != nil {
		// Connection refused, reset, timed out: the probe ran and failed.
		return messages.ProbeFailure, err.Error(), nil
	}
	defer func() { _ = res.Body.Close() }()
	raw, err := io.ReadAll(io.LimitReader(res.Body, maxBody+1))
	if err != nil && !errors.Is(err, context.DeadlineExceeded) {
		return messages.ProbeFailure, fmt.Sprintf("read response body: %v", err), nil
	}
	body := truncate(string(raw), maxBody)
	switch {
	case res.StatusCode >= http.StatusOK && res.StatusCode < http.StatusMultipleChoices:
		return messages.ProbeSuccess, body, nil
	case res.StatusCode >= http.StatusMultipleChoices && res.StatusCode < http.StatusBadRequest:
		klog.V(2).InfoS("Probe terminated redirects", "url", req.URL.String(), "statusCode", res.StatusCode, "location", res.Header.Get("Location"))
		return messages.ProbeSuccess, fmt.Sprintf("%s, Response body: %s", RedirectWarning, body), nil
	}
	msg := fmt.Sprintf("HTTP probe failed with statuscode: %d", res.StatusCode)
	if body != "" {
		msg += ", body: " + truncate(body, 1024)
	}
	return messages.ProbeFailure, msg, nil
}

// newHTTPClient returns a client for one probe: no keep-alives (a probe
// must not hold connections open in the container), no proxy, TLS without
// verification (probes check liveness, not identity), and same-host
// redirects only.
func newHTTPClient(timeout time.Duration) *http.Client {
	transport := &http.Transport{
		Proxy:              nil,
		DisableKeepAlives:  true,
		DisableCompression: true,
		TLSClientConfig:    &tls.Config{InsecureSkipVerify: true}, //nolint:gosec // probes do not verify identity
		DialContext:        (&net.Dialer{Timeout: timeout}).DialContext,
	}
	return &http.Client{
		Transport:     transport,
		Timeout:       timeout,
		CheckRedirect: sameHostRedirects,
	}
}

// sameHostRedirects follows a redirect only to the host of the original
// request and at most maxRedirects times.
func sameHostRedirects(req *http.Request, via []*http.Request) error {
	if len(via) == 0 {
		return nil
	}
	if req.URL.Hostname() != via[0].URL.Hostname() {
		return http.ErrUseLastResponse
	}
	if len(via) >= maxRedirects {
		return fmt.Errorf("stopped after %d redirects", maxRedirects)
	}
	return nil
}
