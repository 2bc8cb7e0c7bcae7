package cri

import (
	"context"
	"errors"
	"fmt"
	"io"
	"net"
	"strings"
	"sync"
	"sync/atomic"
	"time"

	"google.golang.org/grpc"
	"google.golang.org/grpc/codes"
	"google.golang.org/grpc/credentials/insecure"
	"google.golang.org/grpc/status"
	runtimeapi "k8s.io/cri-api/pkg/apis/runtime/v1"
	"k8s.io/klog/v2"

	"github.com/actorlet/actorlet/messages/seconds"
)

const (
	// DefaultTimeout bounds ordinary CRI calls.
	DefaultTimeout = 2 * time.Minute
	// DefaultLongTimeout bounds RunPodSandbox, StopPodSandbox and PullImage.
	DefaultLongTimeout = 4 * time.Minute
	// MaxMsgSize is the largest gRPC message sent or received (16 MiB).
	MaxMsgSize = 16 * 1024 * 1024
)

// Client is a CRI v1 gRPC client on a unix socket. Every call is bounded by
// the client's per-call timeout unless the caller's context ends sooner.
type Client struct {
	endpoint    string
	conn        *grpc.ClientConn
	rt          runtimeapi.RuntimeServiceClient
	img         runtimeapi.ImageServiceClient
	timeout     time.Duration
	longTimeout time.Duration
	eventSource atomic.Int32 // an eventSource* value: what GetContainerEvents follows
	exits       taskExits    // exits from containerd's event service CRI may not show yet
	calls       sync.Map     // CRI method name → *atomic.Uint64: unary calls made
}

var _ Runtime = &Client{}

// DialOption configures Dial.
type DialOption func(*Client)

// WithTimeout sets the timeout of ordinary calls (default 2 min).
func WithTimeout(d time.Duration) DialOption {
	return func(c *Client) {
		if d > 0 {
			c.timeout = d
		}
	}
}

// WithLongTimeout sets the timeout of RunPodSandbox, StopPodSandbox and
// PullImage (default 4 min).
func WithLongTimeout(d time.Duration) DialOption {
	return func(c *Client) {
		if d > 0 {
			c.longTimeout = d
		}
	}
}

// SocketPath returns the filesystem path of a unix endpoint given as
// "unix:///path/to.sock" or a bare path.
func SocketPath(endpoint string) (string, error) {
	switch {
	case endpoint == "":
		return "", errors.New("endpoint: must not be empty")
	case strings.HasPrefix(endpoint, "unix://"):
		p := strings.TrimPrefix(endpoint, "unix://")
		if p == "" {
			return "", fmt.Errorf("endpoint %q: missing socket path", endpoint)
		}
		return p, nil
	case strings.Contains(endpoint, "://"):
		return "", fmt.Errorf("endpoint %q: only unix sockets are supported", endpoint)
	default:
		return endpoint, nil
	}
}

// Dial connects to the CRI runtime at endpoint and checks that it serves CRI
// v1 with a Version call. Dial waits for the socket to accept connections
// until ctx ends (or the ordinary call timeout passes), so a runtime that is
// still starting is tolerated, and one that never comes up fails with the
// last connection error.
func Dial(ctx context.Context, endpoint string, opts ...DialOption) (*Client, error) {
	path, err := SocketPath(endpoint)
	if err != nil {
		return nil, err
	}
	c := &Client{
		endpoint:    "unix://" + path,
		timeout:     DefaultTimeout,
		longTimeout: DefaultLongTimeout,
	}
	for _, o := range opts {
		o(c)
	}
	conn, err := grpc.NewClient("passthrough:///"+c.endpoint,
		grpc.WithTransportCredentials(insecure.NewCredentials()),
		grpc.WithContextDialer(func(ctx context.Context, _ string) (net.Conn, error) {
			var d net.Dialer
			return d.DialContext(ctx, "unix", path)
		}),
		grpc.WithDefaultCallOptions(
			grpc.MaxCallRecvMsgSize(MaxMsgSize),
			grpc.MaxCallSendMsgSize(MaxMsgSize),
		),
		grpc.WithUnaryInterceptor(c.traceCall),
	)
	if err != nil {
		return nil, fmt.Errorf("connect to CRI runtime at %q: %w", c.endpoint, err)
	}
	c.conn = conn
	c.rt = runtimeapi.NewRuntimeServiceClient(conn)
	c.img = runtimeapi.NewImageServiceClient(conn)

	vctx, cancel := context.WithTimeout(ctx, c.timeout)
	defer cancel()
	_, err = c.rt.Version(vctx, &runtimeapi.VersionRequest{Version: "v1"}, grpc.WaitForReady(true))
	if err != nil {
		_ = conn.Close()
		if status.Code(err) == codes.Unimplemented {
			return nil, fmt.Errorf("CRI runtime at %q does not serve the CRI v1 API: %w", c.endpoint, err)
		}
		return nil, fmt.Errorf("connect to CRI runtime at %q: %w", c.endpoint, err)
	}
	return c, nil
}

// traceCall counts every unary CRI call by method (CallCounts) and logs it
// with its duration at verbosity 6: the raw material of a breakdown of
// where a pod's start or teardown goes.
func (c *Client) traceCall(ctx context.Context, method string, req, reply any, cc *grpc.ClientConn, invoker grpc.UnaryInvoker, opts ...grpc.CallOption) error {
	name := method[strings.LastIndex(method, "/")+1:]
	n, ok := c.calls.Load(name)
	if !ok {
		n, _ = c.calls.LoadOrStore(name, new(atomic.Uint64))
	}
	n.(*atomic.Uint64).Add(1)
	if !klog.V(6).Enabled() {
		return invoker(ctx, method, req, reply, cc, opts...)
	}
	start := time.Now()
	err := invoker(ctx, method, req, reply, cc, opts...)
	klog.V(6).InfoS("CRI call", "method", name, "took", time.Since(start), "err", err)
	return err
}

// CallCounts returns how many unary CRI calls the client made, by method
// ("RunPodSandbox", "ContainerStatus", ...), since it was dialled. The
// methods are the CRI API's, so the map stays small.
func (c *Client) CallCounts() map[string]uint64 {
	out := map[string]uint64{}
	c.calls.Range(func(k, v any) bool {
		out[k.(string)] = v.(*atomic.Uint64).Load()
		return true
	})
	return out
}

// Endpoint returns the runtime endpoint as "unix:///path".
func (c *Client) Endpoint() string { return c.endpoint }

// Close closes the connection.
func (c *Client) Close() error { return c.conn.Close() }

// unary makes one CRI call with a deadline of timeout (within ctx's) and
// wraps its error as "<format, args>: <error>".
func unary[Req, Resp any](ctx context.Context, timeout time.Duration, call func(context.Context, Req, ...grpc.CallOption) (Resp, error),
	req Req, format string, args ...any) (Resp, error) {
	ctx, cancel := context.WithTimeout(ctx, timeout)
	defer cancel()
	resp, err := call(ctx, req)
	if err != nil {
		var zero Resp
		return zero, fmt.Errorf(format+": %w", append(args, err)...)
	}
	return resp, nil
}

// Version returns the runtime name, version and API version.
func (c *Client) Version(ctx context.Context, apiVersion string) (*runtimeapi.VersionResponse, error) {
	return unary(ctx, c.timeout, c.rt.Version, &runtimeapi.VersionRequest{Version: apiVersion}, "Version")
}

// Status returns the runtime's conditions.
func (c *Client) Status(ctx context.Context, verbose bool) (*runtimeapi.StatusResponse, error) {
	resp, err := unary(ctx, c.timeout, c.rt.Status, &runtimeapi.StatusRequest{Verbose: verbose}, "Status")
	if err != nil {
		return nil, err
	}
	if resp.GetStatus() == nil {
		return nil, errors.New("Status: runtime returned no status")
	}
	return resp, nil
}

// GetContainerEvents streams container events into ch until ctx ends or the
// stream fails; it always returns a non-nil error (ctx's, or the stream's).
// connectionEstablishedCallback is called once the stream is known to work.
//
// A runtime that answers CRI GetContainerEvents with Unimplemented (containerd
// 1.6) is followed through containerd's own event service on the same socket
// when it serves one (see containerd_events.go); only a runtime with neither
// returns Unimplemented. The source in use is EventSource.
func (c *Client) GetContainerEvents(ctx context.Context, ch chan *runtimeapi.ContainerEventResponse, connectionEstablishedCallback func(runtimeapi.RuntimeService_GetContainerEventsClient)) error {
	if c.eventSource.Load() != eventSourceContainerd {
		err := c.criContainerEvents(ctx, ch, connectionEstablishedCallback)
		if !IsUnimplemented(err) {
			return err
		}
		if c.eventSource.Swap(eventSourceNone) != eventSourceNone {
			klog.InfoS("Container runtime does not implement CRI GetContainerEvents, trying containerd's event service", "endpoint", c.endpoint)
		}
	}
	err := c.containerdEvents(ctx, ch, connectionEstablishedCallback)
	if IsUnimplemented(err) {
		c.eventSource.Store(eventSourceNone)
	}
	return err
}

// criProbeWindow is how long the first receive of a CRI event stream may
// take to fail before the stream is taken as working: a runtime without the
// verb answers Unimplemented at once, a working one sends nothing until a
// container changes.
const criProbeWindow = 500 * time.Millisecond

// criContainerEvents follows CRI GetContainerEvents.
func (c *Client) criContainerEvents(ctx context.Context, ch chan *runtimeapi.ContainerEventResponse, established func(runtimeapi.RuntimeService_GetContainerEventsClient)) error {
	ctx, cancel := context.WithCancel(ctx)
	defer cancel()
	stream, err := c.rt.GetContainerEvents(ctx, &runtimeapi.GetEventsRequest{})
	if err != nil {
		return fmt.Errorf("GetContainerEvents: %w", err)
	}
	type recv struct {
		ev  *runtimeapi.ContainerEventResponse
		err error
	}
	first := make(chan recv, 1)
	go func() {
		ev, err := stream.Recv()
		first <- recv{ev, err}
	}()
	var ev *runtimeapi.ContainerEventResponse
	select {
	case r := <-first:
		if r.err != nil {
			return fmt.Errorf("GetContainerEvents: %w", eofAsUnexpected(r.err))
		}
		ev, first = r.ev, nil
	case <-time.After(criProbeWindow):
		// Still open: the stream works; its first receive goes on below.
	case <-ctx.Done():
		return fmt.Errorf("GetContainerEvents: %w", ctx.Err())
	}
	if c.eventSource.Swap(eventSourceCRI) != eventSourceCRI {
		klog.InfoS("Container events: CRI GetContainerEvents", "endpoint", c.endpoint)
	}
	if established != nil {
		established(stream)
	}
	var early sync.WaitGroup
	defer early.Wait() // after cancel (deferred later, run first)
	defer cancel()
	early.Go(func() { c.earlyExits(ctx, ch) })
	for {
		if ev == nil {
			var err error
			if first != nil {
				select {
				case r := <-first:
					ev, err = r.ev, r.err
					first = nil
				case <-ctx.Done():
					return fmt.Errorf("GetContainerEvents: %w", ctx.Err())
				}
			} else {
				ev, err = stream.Recv()
			}
			if err != nil {
				return fmt.Errorf("GetContainerEvents: %w", eofAsUnexpected(err))
			}
		}
		select {
		case ch <- ev:
		case <-ctx.Done():
			return fmt.Errorf("GetContainerEvents: %w", ctx.Err())
		}
		ev = nil
	}
}

func eofAsUnexpected(err error) error {
	if err == io.EOF {
		return io.ErrUnexpectedEOF
	}
	return err
}

// RunPodSandbox creates and starts a pod sandbox and returns its ID.
func (c *Client) RunPodSandbox(ctx context.Context, config *runtimeapi.PodSandboxConfig, runtimeHandler string) (string, error) {
	resp, err := unary(ctx, c.longTimeout, c.rt.RunPodSandbox, &runtimeapi.RunPodSandboxRequest{Config: config, RuntimeHandler: runtimeHandler},
		"RunPodSandbox %q", sandboxName(config))
	if err != nil {
		return "", err
	}
	if resp.GetPodSandboxId() == "" {
		return "", fmt.Errorf("RunPodSandbox %q: runtime returned an empty sandbox ID", sandboxName(config))
	}
	return resp.PodSandboxId, nil
}

// StopPodSandbox stops the sandbox and all its containers.
func (c *Client) StopPodSandbox(ctx context.Context, podSandboxID string) error {
	_, err := unary(ctx, c.longTimeout, c.rt.StopPodSandbox, &runtimeapi.StopPodSandboxRequest{PodSandboxId: podSandboxID}, "StopPodSandbox %q", podSandboxID)
	return err
}

// RemovePodSandbox removes the sandbox and all its containers.
func (c *Client) RemovePodSandbox(ctx context.Context, podSandboxID string) error {
	_, err := unary(ctx, c.timeout, c.rt.RemovePodSandbox, &runtimeapi.RemovePodSandboxRequest{PodSandboxId: podSandboxID}, "RemovePodSandbox %q", podSandboxID)
	return err
}

// PodSandboxStatus returns the runtime's answer as-is.
func (c *Client) PodSandboxStatus(ctx context.Context, podSandboxID string, verbose bool) (*runtimeapi.PodSandboxStatusResponse, error) {
	return unary(ctx, c.timeout, c.rt.PodSandboxStatus, &runtimeapi.PodSandboxStatusRequest{PodSandboxId: podSandboxID, Verbose: verbose},
		"PodSandboxStatus %q", podSandboxID)
}

// ListPodSandbox lists the sandboxes matching filter (nil: all).
func (c *Client) ListPodSandbox(ctx context.Context, filter *runtimeapi.PodSandboxFilter) ([]*runtimeapi.PodSandbox, error) {
	resp, err := unary(ctx, c.timeout, c.rt.ListPodSandbox, &runtimeapi.ListPodSandboxRequest{Filter: filter}, "ListPodSandbox")
	return resp.GetItems(), err
}

// CreateContainer creates a container in the sandbox and returns its ID.
func (c *Client) CreateContainer(ctx context.Context, podSandboxID string, config *runtimeapi.ContainerConfig, sandboxConfig *runtimeapi.PodSandboxConfig) (string, error) {
	resp, err := unary(ctx, c.timeout, c.rt.CreateContainer, &runtimeapi.CreateContainerRequest{
		PodSandboxId:  podSandboxID,
		Config:        config,
		SandboxConfig: sandboxConfig,
	}, "CreateContainer %q in sandbox %q", config.GetMetadata().GetName(), podSandboxID)
	if err != nil {
		return "", err
	}
	if resp.GetContainerId() == "" {
		return "", fmt.Errorf("CreateContainer %q in sandbox %q: runtime returned an empty container ID", config.GetMetadata().GetName(), podSandboxID)
	}
	return resp.ContainerId, nil
}

// StartContainer starts a created container.
func (c *Client) StartContainer(ctx context.Context, containerID string) error {
	_, err := unary(ctx, c.timeout, c.rt.StartContainer, &runtimeapi.StartContainerRequest{ContainerId: containerID}, "StartContainer %q", containerID)
	return err
}

// StopContainer stops a container, sending SIGKILL after timeout seconds
// (clamped to seconds.MaxSeconds, so no runtime overflows converting it).
// The call's own deadline leaves the runtime the whole grace period.
func (c *Client) StopContainer(ctx context.Context, containerID string, timeout int64) error {
	timeout = seconds.Clamp(timeout)
	_, err := unary(ctx, c.timeout+seconds.Duration(timeout), c.rt.StopContainer, &runtimeapi.StopContainerRequest{ContainerId: containerID, Timeout: timeout},
		"StopContainer %q", containerID)
	return err
}

// RemoveContainer removes a container, stopping it first if it runs.
func (c *Client) RemoveContainer(ctx context.Context, containerID string) error {
	_, err := unary(ctx, c.timeout, c.rt.RemoveContainer, &runtimeapi.RemoveContainerRequest{ContainerId: containerID}, "RemoveContainer %q", containerID)
	return err
}

// ListContainers lists the containers matching filter (nil: all).
func (c *Client) ListContainers(ctx context.Context, filter *runtimeapi.ContainerFilter) ([]*runtimeapi.Container, error) {
	resp, err := unary(ctx, c.timeout, c.rt.ListContainers, &runtimeapi.ListContainersRequest{Filter: filter}, "ListContainers")
	if err != nil {
		return nil, err
	}
	return c.exits.list(resp.GetContainers(), filter.GetState() != nil && filter.GetState().GetState() == runtimeapi.ContainerState_CONTAINER_RUNNING), nil
}

// ContainerStatus returns the runtime's answer, as-is but for a container
// whose exit containerd's event service reported and CRI does not show yet
// (taskExits).
func (c *Client) ContainerStatus(ctx context.Context, containerID string, verbose bool) (*runtimeapi.ContainerStatusResponse, error) {
	resp, err := unary(ctx, c.timeout, c.rt.ContainerStatus, &runtimeapi.ContainerStatusRequest{ContainerId: containerID, Verbose: verbose},
		"ContainerStatus %q", containerID)
	if err != nil {
		return nil, err
	}
	if resp.GetStatus() != nil {
		c.exits.status(resp.GetStatus())
	}
	return resp, nil
}

// ExecSync runs cmd in the container and waits for it, at most timeout
// (0: no command timeout). A command that ran and exited non-zero returns
// its output and an *ExitError.
func (c *Client) ExecSync(ctx context.Context, containerID string, cmd []string, timeout time.Duration) ([]byte, []byte, error) {
	callTimeout := c.timeout
	if timeout > 0 {
		callTimeout += timeout
	}
	secs := int64(timeout / time.Second)
	if timeout > 0 && timeout%time.Second != 0 {
		secs++ // CRI counts whole seconds; never round a timeout down to "none"
	}
	resp, err := unary(ctx, callTimeout, c.rt.ExecSync, &runtimeapi.ExecSyncRequest{ContainerId: containerID, Cmd: cmd, Timeout: secs},
		"ExecSync %v in %q", cmd, containerID)
	if err != nil {
		return nil, nil, err
	}
	if resp.ExitCode != 0 {
		return resp.Stdout, resp.Stderr, &ExitError{Code: resp.ExitCode, Stdout: resp.Stdout, Stderr: resp.Stderr}
	}
	return resp.Stdout, resp.Stderr, nil
}

// PullImage pulls the image and returns its reference (image ID).
func (c *Client) PullImage(ctx context.Context, image *runtimeapi.ImageSpec, auth *runtimeapi.AuthConfig, podSandboxConfig *runtimeapi.PodSandboxConfig) (string, error) {
	resp, err := unary(ctx, c.longTimeout, c.img.PullImage, &runtimeapi.PullImageRequest{Image: image, Auth: auth, SandboxConfig: podSandboxConfig},
		"PullImage %q", image.GetImage())
	if err != nil {
		return "", err
	}
	if resp.GetImageRef() == "" {
		return "", fmt.Errorf("PullImage %q: runtime returned an empty image reference", image.GetImage())
	}
	return resp.ImageRef, nil
}

// ImageStatus returns the runtime's answer as-is; Image is nil when the
// image is not present.
func (c *Client) ImageStatus(ctx context.Context, image *runtimeapi.ImageSpec, verbose bool) (*runtimeapi.ImageStatusResponse, error) {
	return unary(ctx, c.timeout, c.img.ImageStatus, &runtimeapi.ImageStatusRequest{Image: image, Verbose: verbose}, "ImageStatus %q", image.GetImage())
}

// ListImages lists the images matching filter (nil: all).
func (c *Client) ListImages(ctx context.Context, filter *runtimeapi.ImageFilter) ([]*runtimeapi.Image, error) {
	resp, err := unary(ctx, c.timeout, c.img.ListImages, &runtimeapi.ListImagesRequest{Filter: filter}, "ListImages")
	return resp.GetImages(), err
}

// RemoveImage removes the image; removing an absent image is not an error.
func (c *Client) RemoveImage(ctx context.Context, image *runtimeapi.ImageSpec) error {
	_, err := unary(ctx, c.timeout, c.img.RemoveImage, &runtimeapi.RemoveImageRequest{Image: image}, "RemoveImage %q", image.GetImage())
	return err
}

// ImageFsInfo returns the runtime's image (and container) filesystems
// and their usage.
func (c *Client) ImageFsInfo(ctx context.Context) (*runtimeapi.ImageFsInfoResponse, error) {
	return unary(ctx, c.timeout, c.img.ImageFsInfo, &runtimeapi.ImageFsInfoRequest{}, "ImageFsInfo")
}

// ListContainerStats returns the containers' usage (memory working set,
// writable layer) with their labels.
func (c *Client) ListContainerStats(ctx context.Context) ([]*runtimeapi.ContainerStats, error) {
	resp, err := unary(ctx, c.timeout, c.rt.ListContainerStats, &runtimeapi.ListContainerStatsRequest{}, "ListContainerStats")
	return resp.GetStats(), err
}

func sandboxName(config *runtimeapi.PodSandboxConfig) string {
	m := config.GetMetadata()
	return fmt.Sprintf("%s/%s", m.GetNamespace(), m.GetName())
}
