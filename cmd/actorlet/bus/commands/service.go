package commands

import (
	"context"
	"encoding/json"
	"fmt"
	"strings"
	"sync"
	"time"

	"github.com/nats-io/nats.go"
	"github.com/nats-io/nats.go/micro"
	v1 "k8s.io/api/core/v1"
	"k8s.io/klog/v2"

	"github.com/actorlet/actorlet/messages/seconds"

	"github.com/actorlet/actorlet/messages/wire"
)

// Defaults of ServiceOptions.
const (
	DefaultRequestTimeout  = 30 * time.Second
	DefaultFollowPoll      = 250 * time.Millisecond
	DefaultFollowKeepAlive = 5 * time.Second
	// ChunkAckTimeout is how long the service waits for a client to
	// acknowledge a streamed log chunk before it decides the client is gone.
	ChunkAckTimeout = 5 * time.Second
	maxChunkBytes   = 256 * 1024
)

// ServiceOptions configure a node's command service.
type ServiceOptions struct {
	NodeName string
	Version  string // semver of the agent; "0.0.0" if empty
	// RequestTimeout bounds every request but exec and log follow.
	RequestTimeout time.Duration
	// FollowPoll is how often a log follow looks for new lines.
	FollowPoll time.Duration
	// FollowKeepAlive is how long a follow may go without sending a chunk;
	// then it sends an empty one, so a client that went away is noticed
	// even when the container is silent.
	FollowKeepAlive time.Duration
	// Sessions bound interactive sessions (exec -it, attach, port-forward).
	Sessions SessionOptions

	// DenyExec and DenyLogs refuse those verbs at the node with 403, even
	// to an operator the bus lets through (actorlet --allow-exec=false,
	// --allow-logs=false, --enable-debugging-handlers=false).
	DenyExec, DenyLogs bool

	// followEnded, when set (tests), learns why each log follow ended.
	followEnded func(reason string)
}

// Service is one node's command service.
type Service struct {
	nc     *nats.Conn
	node   Node
	opts   ServiceOptions
	svc    micro.Service
	ctx    context.Context
	cancel context.CancelFunc
	wg     sync.WaitGroup

	sessions *sessions
}

// StartService registers the node's micro service and its endpoints.
func StartService(nc *nats.Conn, node Node, opts ServiceOptions) (*Service, error) {
	if opts.NodeName == "" {
		return nil, fmt.Errorf("start command service: NodeName: required")
	}
	if opts.Version == "" {
		opts.Version = "0.0.0"
	}
	if opts.RequestTimeout <= 0 {
		opts.RequestTimeout = DefaultRequestTimeout
	}
	if opts.FollowPoll <= 0 {
		opts.FollowPoll = DefaultFollowPoll
	}
	if opts.FollowKeepAlive <= 0 {
		opts.FollowKeepAlive = DefaultFollowKeepAlive
	}
	s := &Service{nc: nc, node: node, opts: opts}
	s.ctx, s.cancel = context.WithCancel(context.Background())
	svc, err := micro.AddService(nc, micro.Config{
		Name:        wire.CommandServiceName,
		Version:     opts.Version,
		Description: "actorlet node commands",
		Metadata:    map[string]string{"node": opts.NodeName},
	})
	if err != nil {
		s.cancel()
		return nil, fmt.Errorf("add micro service for node %q: %w", opts.NodeName, err)
	}
	s.svc = svc
	if err := s.startSessions(); err != nil {
		s.cancel()
		_ = svc.Stop()
		return nil, err
	}
	handlers := map[string]func(context.Context, micro.Request) (any, error){
		wire.VerbPodsList:     s.listPods,
		wire.VerbPodsGet:      s.getPod,
		wire.VerbPodsDescribe: s.describePod,
		wire.VerbLogs:         s.logs,
		wire.VerbExec:         s.exec,
		wire.VerbRestart:      s.restart,
		wire.VerbEvict:        s.evict,

		wire.VerbStreamExec:        s.openSession(wire.VerbStreamExec),
		wire.VerbStreamAttach:      s.openSession(wire.VerbStreamAttach),
		wire.VerbStreamPortForward: s.openSession(wire.VerbStreamPortForward),
	}
	for _, verb := range wire.Verbs {
		h := handlers[verb]
		err := svc.AddEndpoint(strings.ReplaceAll(verb, ".", "-"), s.serve(verb, h),
			micro.WithEndpointSubject(wire.CommandSubject(opts.NodeName, verb)))
		if err != nil {
			_ = s.Stop()
			return nil, fmt.Errorf("add endpoint %q: %w", verb, err)
		}
	}
	klog.InfoS("Command service started", "node", opts.NodeName, "subject", wire.CommandSubject(opts.NodeName, ">"))
	return s, nil
}

// Stop unregisters the service, cancels requests in flight (log follows end)
// and waits for their handlers.
func (s *Service) Stop() error {
	s.cancel()
	err := s.svc.Stop()
	s.wg.Wait()
	s.sessions.stop()
	if err != nil {
		return fmt.Errorf("stop command service: %w", err)
	}
	return nil
}

// serve runs each request in its own goroutine so a slow exec or a log
// follow never holds up the endpoint. Replies are published on the request's
// reply subject directly: micro's Request is not safe to use once its
// handler returned.
func (s *Service) serve(verb string, h func(context.Context, micro.Request) (any, error)) micro.Handler {
	return micro.HandlerFunc(func(req micro.Request) {
		if s.ctx.Err() != nil {
			_ = req.Error(fmt.Sprint(wire.CodeInternal), "node is shutting down", nil)
			return
		}
		reply := req.Reply()
		if err := checkReply(reply); err != nil {
			klog.InfoS("Dropped a command that is not a request from an inbox", "verb", verb, "node", s.opts.NodeName, "reply", reply)
			return
		}
		if denied := s.denied(verb); denied != nil {
			if err := s.respond(reply, nil, denied); err != nil {
				klog.ErrorS(err, "Failed to send command reply", "verb", verb, "node", s.opts.NodeName)
			}
			return
		}
		s.wg.Add(1)
		go func() {
			defer s.wg.Done()
			resp, err := h(s.ctx, req)
			if err := s.respond(reply, resp, err); err != nil {
				klog.ErrorS(err, "Failed to send command reply", "verb", verb, "node", s.opts.NodeName)
			}
			if err != nil && wire.ToError(err).Code >= wire.CodeInternal {
				klog.ErrorS(err, "Command failed", "verb", verb, "node", s.opts.NodeName)
			}
		}()
	})
}

// denied returns the 403 this node's policy answers verb with, or nil.
func (s *Service) denied(verb string) error {
	switch {
	case (verb == wire.VerbExec || verb == wire.VerbStreamExec || verb == wire.VerbStreamAttach || verb == wire.VerbStreamPortForward) && s.opts.DenyExec:
		// Interactive sessions steer a container (or reach into its
		// network) as exec does: the kubelet's debugging handlers switch
		// covers them all.
		return Forbidden(verb, "--allow-exec=false")
	case verb == wire.VerbLogs && s.opts.DenyLogs:
		return Forbidden(verb, "--allow-logs=false")
	}
	return nil
}

// respond publishes a reply: the JSON response, or a micro error (headers
// Nats-Service-Error-Code and Nats-Service-Error) when err is set.
func (s *Service) respond(reply string, resp any, err error) error {
	if reply == "" {
		return nil
	}
	msg := &nats.Msg{Subject: reply, Header: nats.Header{}}
	if err != nil {
		e := wire.ToError(err)
		msg.Header.Set(micro.ErrorCodeHeader, fmt.Sprint(e.Code))
		msg.Header.Set(micro.ErrorHeader, e.Description)
	} else {
		data, merr := json.Marshal(resp)
		if merr != nil {
			return s.respond(reply, nil, fmt.Errorf("encode reply: %w", merr))
		}
		msg.Data = data
	}
	if perr := s.nc.PublishMsg(msg); perr != nil {
		return fmt.Errorf("publish reply to %q: %w", reply, perr)
	}
	return nil
}

// decode unmarshals the request and checks its pod reference.
func decode(req micro.Request, v any) error {
	if len(req.Data()) == 0 {
		return wire.BadRequest("body", "empty request")
	}
	if err := json.Unmarshal(req.Data(), v); err != nil {
		return wire.BadRequest("body", err.Error())
	}
	return nil
}

func checkRef(namespace *string, name string) error {
	if name == "" {
		return wire.BadRequest("name", "required")
	}
	if *namespace == "" {
		*namespace = "default"
	}
	return nil
}

func (s *Service) timeout(ctx context.Context) (context.Context, context.CancelFunc) {
	return context.WithTimeout(ctx, s.opts.RequestTimeout)
}

func (s *Service) listPods(ctx context.Context, req micro.Request) (any, error) {
	var r wire.ListPodsRequest
	if len(req.Data()) > 0 {
		if err := decode(req, &r); err != nil {
			return nil, err
		}
	}
	ctx, cancel := s.timeout(ctx)
	defer cancel()
	pods, err := s.node.ListPods(ctx)
	if err != nil {
		return nil, fmt.Errorf("list pods: %w", err)
	}
	out := wire.ListPodsResponse{Pods: []*v1.Pod{}}
	for _, p := range pods {
		if r.Namespace == "" || p.Namespace == r.Namespace {
			out.Pods = append(out.Pods, p)
		}
	}
	return out, nil
}

func (s *Service) getPod(ctx context.Context, req micro.Request) (any, error) {
	var r wire.GetPodRequest
	if err := decode(req, &r); err != nil {
		return nil, err
	}
	if err := checkRef(&r.Namespace, r.Name); err != nil {
		return nil, err
	}
	ctx, cancel := s.timeout(ctx)
	defer cancel()
	pods, err := s.node.ListPods(ctx)
	if err != nil {
		return nil, fmt.Errorf("list pods: %w", err)
	}
	for _, p := range pods {
		if p.Namespace == r.Namespace && p.Name == r.Name {
			return wire.GetPodResponse{Pod: p}, nil
		}
	}
	return nil, wire.NotFound("pod %s/%s", r.Namespace, r.Name)
}

func (s *Service) describePod(ctx context.Context, req micro.Request) (any, error) {
	var r wire.DescribePodRequest
	if err := decode(req, &r); err != nil {
		return nil, err
	}
	if err := checkRef(&r.Namespace, r.Name); err != nil {
		return nil, err
	}
	ctx, cancel := s.timeout(ctx)
	defer cancel()
	d, err := s.node.DescribePod(ctx, r.Namespace, r.Name)
	if err != nil {
		return nil, fmt.Errorf("describe pod %s/%s: %w", r.Namespace, r.Name, err)
	}
	return d, nil
}

func (s *Service) exec(ctx context.Context, req micro.Request) (any, error) {
	var r wire.ExecRequest
	if err := decode(req, &r); err != nil {
		return nil, err
	}
	if err := checkRef(&r.Namespace, r.Name); err != nil {
		return nil, err
	}
	if len(r.Command) == 0 {
		return nil, wire.BadRequest("command", "required")
	}
	if r.TimeoutSeconds < 0 {
		return nil, wire.BadRequest("timeoutSeconds", "must not be negative")
	}
	timeout := wire.DefaultExecTimeout
	if r.TimeoutSeconds > 0 {
		timeout = seconds.Duration(r.TimeoutSeconds)
	}
	// A little slack so the runtime's own timeout is seen before ours.
	ctx, cancel := context.WithTimeout(ctx, timeout+2*time.Second)
	defer cancel()
	stdout, stderr, code, err := s.node.Exec(ctx, r.Namespace, r.Name, r.Container, r.Command, timeout)
	if err != nil {
		return nil, fmt.Errorf("exec in %s/%s: %w", r.Namespace, r.Name, err)
	}
	return wire.ExecResponse{Stdout: stdout, Stderr: stderr, ExitCode: code}, nil
}

func (s *Service) restart(ctx context.Context, req micro.Request) (any, error) {
	var r wire.RestartRequest
	if err := decode(req, &r); err != nil {
		return nil, err
	}
	if err := checkRef(&r.Namespace, r.Name); err != nil {
		return nil, err
	}
	ctx, cancel := s.timeout(ctx)
	defer cancel()
	if err := s.node.Restart(ctx, r.Namespace, r.Name, r.Container); err != nil {
		return nil, fmt.Errorf("restart %s/%s: %w", r.Namespace, r.Name, err)
	}
	what := "pod " + r.Namespace + "/" + r.Name
	if r.Container != "" {
		what = fmt.Sprintf("container %q of %s", r.Container, what)
	}
	return wire.Ack{Message: what + " restart requested"}, nil
}

func (s *Service) evict(ctx context.Context, req micro.Request) (any, error) {
	var r wire.EvictRequest
	if err := decode(req, &r); err != nil {
		return nil, err
	}
	if err := checkRef(&r.Namespace, r.Name); err != nil {
		return nil, err
	}
	if r.GracePeriodSeconds != nil && *r.GracePeriodSeconds < 0 {
		return nil, wire.BadRequest("gracePeriodSeconds", "must not be negative")
	}
	if r.Reason == "" {
		r.Reason = "Evicted"
	}
	ctx, cancel := s.timeout(ctx)
	defer cancel()
	if err := s.node.Evict(ctx, r.Namespace, r.Name, r.GracePeriodSeconds, r.Reason); err != nil {
		return nil, fmt.Errorf("evict %s/%s: %w", r.Namespace, r.Name, err)
	}
	return wire.Ack{Message: fmt.Sprintf("pod %s/%s eviction requested (%s)", r.Namespace, r.Name, r.Reason)}, nil
}
