package commands

import (
	"context"
	"errors"
	"fmt"
	"io"
	"net/http"
	"net/url"
	"regexp"
	"strconv"
	"strings"
	"time"

	v1 "k8s.io/api/core/v1"
	"k8s.io/apimachinery/pkg/util/httpstream"
	"k8s.io/client-go/rest"
	"k8s.io/client-go/tools/portforward"
	"k8s.io/client-go/tools/remotecommand"
	"k8s.io/client-go/transport/spdy"
	utilexec "k8s.io/client-go/util/exec"
	runtimeapi "k8s.io/cri-api/pkg/apis/runtime/v1"

	"github.com/actorlet/actorlet/cri"
	"github.com/actorlet/actorlet/messages/wire"
)

// StreamingRuntime is what ActorNode needs from the CRI runtime to stream:
// the URLs of Exec, Attach and PortForward sessions on the runtime's
// streaming server, and the pod's sandbox for port-forward.
type StreamingRuntime interface {
	cri.StreamingService
	ListPodSandbox(ctx context.Context, filter *runtimeapi.PodSandboxFilter) ([]*runtimeapi.PodSandbox, error)
}

// labelPodUID is the sandbox label carrying the pod's UID (set by
// cri/kuberuntime, as the kubelet does).
const labelPodUID = "io.kubernetes.pod.uid"

var _ StreamNode = &ActorNode{}

// PrepareStream resolves the pod and container, asks the runtime for a
// streaming URL and returns the function that dials it: remotecommand
// (SPDY) for exec and attach, the port-forward protocol for port-forward.
func (n *ActorNode) PrepareStream(ctx context.Context, verb string, r *wire.SessionRequest) (StreamFunc, error) {
	if n.Streaming == nil {
		return nil, &wire.Error{Code: wire.CodeNotImplemented, Description: "the node's runtime does not stream"}
	}
	p, err := n.pod(ctx, r.Namespace, r.Name)
	if err != nil {
		return nil, err
	}
	return PrepareStreamFor(ctx, n.Streaming, p, verb, r)
}

// PrepareStreamFor prepares a stream of pod p on runtime rt: what
// ActorNode.PrepareStream does once it found the pod (also for test nodes).
func PrepareStreamFor(ctx context.Context, rt StreamingRuntime, p *v1.Pod, verb string, r *wire.SessionRequest) (StreamFunc, error) {
	switch verb {
	case wire.VerbStreamExec, wire.VerbStreamAttach:
		cs, err := container(p, r.Container)
		if err != nil {
			return nil, err
		}
		if cs.State.Running == nil || cs.ContainerID == "" {
			return nil, wire.BadRequest("container", fmt.Sprintf("%q is not running", cs.Name))
		}
		id := runtimeID(cs.ContainerID)
		var rawURL string
		if verb == wire.VerbStreamExec {
			resp, err := rt.Exec(ctx, &runtimeapi.ExecRequest{
				ContainerId: id, Cmd: r.Command, Tty: r.TTY, Stdin: r.Stdin, Stdout: true, Stderr: !r.TTY,
			})
			if err != nil {
				return nil, streamErr(err, cs.Name)
			}
			rawURL = resp.GetUrl()
		} else {
			if r.Stdin && !containerSpec(p, cs.Name).Stdin {
				return nil, wire.BadRequest("stdin", fmt.Sprintf("container %q was not created with stdin: true", cs.Name))
			}
			if r.TTY && !containerSpec(p, cs.Name).TTY {
				return nil, wire.BadRequest("tty", fmt.Sprintf("container %q was not created with tty: true", cs.Name))
			}
			resp, err := rt.Attach(ctx, &runtimeapi.AttachRequest{
				ContainerId: id, Tty: r.TTY, Stdin: r.Stdin, Stdout: true, Stderr: !r.TTY,
			})
			if err != nil {
				return nil, streamErr(err, cs.Name)
			}
			rawURL = resp.GetUrl()
		}
		u, err := streamURL(rawURL)
		if err != nil {
			return nil, err
		}
		return remoteCommand(u, r.TTY), nil
	case wire.VerbStreamPortForward:
		sandbox, err := sandboxOf(ctx, rt, p)
		if err != nil {
			return nil, err
		}
		resp, err := rt.PortForward(ctx, &runtimeapi.PortForwardRequest{PodSandboxId: sandbox, Port: []int32{r.Port}})
		if err != nil {
			return nil, streamErr(err, "")
		}
		u, err := streamURL(resp.GetUrl())
		if err != nil {
			return nil, err
		}
		return portForwardOne(u, r.Port, p.Namespace+"/"+p.Name), nil
	}
	return nil, wire.BadRequest("verb", verb)
}

func containerSpec(p *v1.Pod, name string) v1.Container {
	for _, c := range allContainers(p) {
		if c.Name == name {
			return c
		}
	}
	return v1.Container{}
}

// allContainers is the pod's containers, init containers and ephemeral
// (debug) containers, each as a v1.Container.
func allContainers(p *v1.Pod) []v1.Container {
	out := append(append([]v1.Container(nil), p.Spec.Containers...), p.Spec.InitContainers...)
	for _, ec := range p.Spec.EphemeralContainers {
		out = append(out, v1.Container(ec.EphemeralContainerCommon))
	}
	return out
}

func streamErr(err error, container string) error {
	if cri.IsNotFound(err) {
		return wire.NotFound("container %q: %v", container, err)
	}
	if cri.IsUnimplemented(err) {
		return &wire.Error{Code: wire.CodeNotImplemented, Description: "the runtime does not implement streaming: " + err.Error()}
	}
	return err
}

// sandbox finds the pod's ready sandbox.
func sandboxOf(ctx context.Context, rt StreamingRuntime, p *v1.Pod) (string, error) {
	list, err := rt.ListPodSandbox(ctx, &runtimeapi.PodSandboxFilter{
		State:         &runtimeapi.PodSandboxStateValue{State: runtimeapi.PodSandboxState_SANDBOX_READY},
		LabelSelector: map[string]string{labelPodUID: string(p.UID)},
	})
	if err != nil {
		return "", fmt.Errorf("list sandboxes of %s/%s: %w", p.Namespace, p.Name, err)
	}
	if len(list) == 0 {
		return "", wire.NotFound("running sandbox of pod %s/%s", p.Namespace, p.Name)
	}
	newest := list[0]
	for _, sb := range list[1:] {
		if sb.CreatedAt > newest.CreatedAt {
			newest = sb
		}
	}
	return newest.Id, nil
}

// streamURL checks the runtime's answer: the node dials it as is, so it
// must be absolute.
func streamURL(raw string) (*url.URL, error) {
	u, err := url.Parse(raw)
	if err != nil {
		return nil, fmt.Errorf("runtime's streaming URL %q: %w", raw, err)
	}
	if u.Scheme != "http" && u.Scheme != "https" || u.Host == "" {
		return nil, fmt.Errorf("runtime's streaming URL %q: want an absolute http(s) URL", raw)
	}
	return u, nil
}

// remoteCommand runs an exec or attach stream with the SPDY remotecommand
// protocol (what containerd and CRI-O serve; the newest protocol version
// both sides know is negotiated).
func remoteCommand(u *url.URL, tty bool) StreamFunc {
	return func(ctx context.Context, sio StreamIO) (int, error) {
		ex, err := remotecommand.NewSPDYExecutor(&rest.Config{}, http.MethodPost, u)
		if err != nil {
			return 0, fmt.Errorf("stream to the runtime: %w", err)
		}
		opts := remotecommand.StreamOptions{Stdin: sio.Stdin, Stdout: sio.Stdout, Tty: tty}
		if !tty {
			opts.Stderr = sio.Stderr
		}
		if tty && sio.Resize != nil {
			opts.TerminalSizeQueue = sizeQueue(sio.Resize)
		}
		err = ex.StreamWithContext(ctx, opts)
		var exit utilexec.ExitError
		switch {
		case err == nil:
			return 0, nil
		case errors.As(err, &exit) && exit.Exited():
			return exit.ExitStatus(), nil
		}
		return 0, err
	}
}

type sizeQueue func() *wire.TerminalSize

func (q sizeQueue) Next() *remotecommand.TerminalSize {
	sz := q()
	if sz == nil {
		return nil
	}
	return &remotecommand.TerminalSize{Width: sz.Width, Height: sz.Height}
}

// portForwardOne carries one connection to port in the pod, with the
// port-forward protocol (portforward.k8s.io): an error stream and a data
// stream per connection, as kubectl port-forward opens them.
func portForwardOne(u *url.URL, port int32, pod string) StreamFunc {
	return func(ctx context.Context, sio StreamIO) (int, error) {
		transport, upgrader, err := spdy.RoundTripperFor(&rest.Config{})
		if err != nil {
			return 0, fmt.Errorf("port-forward transport: %w", err)
		}
		dialer := spdy.NewDialer(upgrader, &http.Client{Transport: transport}, http.MethodPost, u)
		conn, _, err := dialer.Dial(portforward.PortForwardProtocolV1Name)
		if err != nil {
			return 0, fmt.Errorf("dial the runtime's port-forward: %w", err)
		}
		defer conn.Close()
		stop := context.AfterFunc(ctx, func() { _ = conn.Close() })
		defer stop()

		headers := http.Header{}
		headers.Set(v1.StreamType, v1.StreamTypeError)
		headers.Set(v1.PortHeader, strconv.Itoa(int(port)))
		headers.Set(v1.PortForwardRequestIDHeader, "0")
		errStream, err := conn.CreateStream(headers)
		if err != nil {
			return 0, fmt.Errorf("create port-forward error stream: %w", err)
		}
		_ = errStream.Close() // nothing is written to it
		remoteErr := make(chan []byte, 1)
		go func() {
			msg, _ := io.ReadAll(errStream)
			remoteErr <- msg
		}()
		headers.Set(v1.StreamType, v1.StreamTypeData)
		data, err := conn.CreateStream(headers)
		if err != nil {
			// The runtime handles the pair once both streams arrive: a
			// forward that failed at once (nothing listens) may reset the
			// data stream before its creation was confirmed here. The
			// reason is then on the error stream.
			select {
			case msg := <-remoteErr:
				if len(msg) > 0 {
					return 0, portForwardError(port, pod, string(msg))
				}
			case <-time.After(errStreamWait):
			case <-ctx.Done():
			}
			return 0, fmt.Errorf("create port-forward data stream: %w", err)
		}
		// The input copy ends with the session's input (EOF, or the
		// session ending).
		go func() {
			if sio.Stdin != nil {
				_, _ = io.Copy(data, sio.Stdin)
			}
			_ = data.Close() // half-close: the pod's side sees EOF
		}()
		_, copyErr := io.Copy(sio.Stdout, data)
		_ = data.Reset()
		conn.RemoveStreams(data, errStream)
		if ctx.Err() != nil {
			return 0, ctx.Err()
		}
		if msg := <-remoteErr; len(msg) > 0 {
			return 0, portForwardError(port, pod, string(msg))
		}
		if copyErr != nil && !errors.Is(copyErr, io.EOF) && !httpstream.IsUpgradeFailure(copyErr) {
			return 0, fmt.Errorf("port-forward to %d: %w", port, copyErr)
		}
		return 0, nil
	}
}

// errStreamWait bounds the wait for the runtime's reason when a forward's
// data stream could not be created.
const errStreamWait = 2 * time.Second

// streamingErrorPrefix matches the prefix the CRI streaming library (in
// containerd, CRI-O and the process runtime alike) puts before a failed
// port-forward's error: it names the sandbox ID and an empty pod UID.
var streamingErrorPrefix = regexp.MustCompile(`^error forwarding port \d+ to pod [^,]*, uid [^:]*: `)

// portForwardError is the runtime's port-forward error as the operator
// reads it: the pod and port, the runtime's reason, and what to check when
// nothing listens on the port.
func portForwardError(port int32, pod, msg string) error {
	msg = streamingErrorPrefix.ReplaceAllString(strings.TrimSpace(msg), "")
	err := fmt.Errorf("port-forward to port %d of pod %s: %s", port, pod, msg)
	if strings.Contains(msg, "connection refused") {
		err = fmt.Errorf("%w (nothing listens on port %d in the pod: is it serving there? check the container's ports and logs)", err, port)
	}
	return err
}

// StreamIO connects a runtime stream to a session: input from the client,
// output to it, and terminal sizes. Stdin is nil without input; Resize is
// nil without a terminal, and returns nil once the session ended.
type StreamIO struct {
	Stdin  io.Reader
	Stdout io.Writer
	Stderr io.Writer
	Resize func() *wire.TerminalSize
}

// StreamFunc runs a prepared stream until it ends or ctx is canceled. It
// returns the remote command's exit code (0 when it has none); an error means
// the stream itself failed.
type StreamFunc func(ctx context.Context, sio StreamIO) (exitCode int, err error)

// StreamNode is implemented by a Node that can run interactive streams. A
// node without it answers the stream verbs with 501.
type StreamNode interface {
	// PrepareStream checks the request against the pod (unknown pod or
	// container: wire.ErrNotFound; not running: a bad request) and asks the
	// runtime for the stream, which the returned function then runs.
	PrepareStream(ctx context.Context, verb string, req *wire.SessionRequest) (StreamFunc, error)
}
