package commands

import (
	"context"
	"encoding/base64"
	"encoding/json"
	"fmt"
	"sort"
	"strings"
	"sync"
	"time"

	"github.com/nats-io/nats.go"
	"github.com/nats-io/nats.go/micro"
	v1 "k8s.io/api/core/v1"
	"k8s.io/klog/v2"

	"github.com/actorlet/actorlet/messages/seconds"
	"github.com/actorlet/actorlet/messages/wire"
	"github.com/actorlet/actorlet/node/publish"
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
	// MaxConcurrentCommands bounds the requests a node serves at once
	// (log follows and execs included); one more is answered at once with
	// wire.CodeBusy.
	MaxConcurrentCommands = 64
	// DefaultListLimit is the page size of pods.list when none is asked.
	DefaultListLimit = 500
	// maxErrorDescription bounds an error's description (a header).
	maxErrorDescription = 1024
	// replyHeadroom is kept free under the bus max_payload for headers.
	replyHeadroom = 8 << 10
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
	slots  chan struct{} // one per request in flight
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
	s := &Service{nc: nc, node: node, opts: opts, slots: make(chan struct{}, MaxConcurrentCommands)}
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
		wire.VerbPlacement:    s.placement,

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
	// The pod verbs again, addressed by namespace (operators scoped to
	// one namespace may publish only there): served once the request's
	// pod is found to be of the subject's namespace.
	for _, verb := range wire.PodVerbs {
		err := svc.AddEndpoint(wire.NamespacedToken+"-"+strings.ReplaceAll(verb, ".", "-"), s.serve(verb, namespaced(verb, handlers[verb])),
			micro.WithEndpointSubject(wire.NamespacedCommandSubject(opts.NodeName, "*", verb)))
		if err != nil {
			_ = s.Stop()
			return nil, fmt.Errorf("add endpoint %q for one namespace: %w", verb, err)
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
		select {
		case s.slots <- struct{}{}:
		default:
			// Refuse at once rather than queue: a flood must not hold
			// goroutines, nor make every caller wait for a timeout.
			_ = req.Error(fmt.Sprint(wire.CodeBusy), fmt.Sprintf("node %s is busy: %d commands in flight (MaxConcurrentCommands); retry later",
				s.opts.NodeName, MaxConcurrentCommands), nil)
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
			defer func() { <-s.slots }()
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
		msg.Header.Set(micro.ErrorHeader, shorten(e.Description, maxErrorDescription))
	} else {
		data, merr := json.Marshal(resp)
		if merr != nil {
			return s.respond(reply, nil, fmt.Errorf("encode reply: %w", merr))
		}
		if limit := s.maxReply(); len(data) > limit {
			return s.respond(reply, nil, &wire.Error{Code: wire.CodeTooLarge, Description: fmt.Sprintf(
				"reply of %d bytes exceeds the %d bytes a bus message can carry (max_payload)", len(data), limit)})
		}
		msg.Data = data
	}
	if perr := s.nc.PublishMsg(msg); perr != nil {
		return fmt.Errorf("publish reply to %q: %w", reply, perr)
	}
	return nil
}

// maxReply is the largest reply body the bus carries.
func (s *Service) maxReply() int {
	mp := int(s.nc.MaxPayload())
	if mp <= 0 {
		mp = 1 << 20
	}
	return mp - replyHeadroom
}

// shorten cuts s to n bytes, saying so: an error may quote a huge name.
func shorten(s string, n int) string {
	if len(s) <= n {
		return s
	}
	return fmt.Sprintf("%s...(%d bytes)", s[:n], len(s))
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

// decodeRef decodes a request about one pod (v, whose namespace and name
// fields are given) and checks the reference: name required, namespace
// defaulted.
func decodeRef(req micro.Request, v any, namespace, name *string) error {
	if err := decode(req, v); err != nil {
		return err
	}
	return checkRef(namespace, *name)
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
	if r.Limit < 0 {
		return nil, wire.BadRequest("limit", "must not be negative")
	}
	if r.Limit == 0 {
		r.Limit = DefaultListLimit
	}
	after, err := decodeContinue(r.Continue)
	if err != nil {
		return nil, err
	}
	pods, err := s.nodePods(ctx)
	if err != nil {
		return nil, err
	}
	sort.Slice(pods, func(i, j int) bool { return podKey(pods[i]) < podKey(pods[j]) })
	out := wire.ListPodsResponse{Pods: []*v1.Pod{}}
	budget := s.maxReply() - 1024 // the envelope and the continue token
	for _, p := range pods {
		if (r.Namespace != "" && p.Namespace != r.Namespace) || (after != "" && podKey(p) <= after) {
			continue
		}
		size, fitted := fitPod(p, budget)
		if len(out.Pods) > 0 && (len(out.Pods) == r.Limit || size > budget) {
			out.Continue = encodeContinue(podKey(out.Pods[len(out.Pods)-1]))
			break
		}
		budget -= size + 1
		out.Pods = append(out.Pods, fitted)
	}
	return out, nil
}

// nodePods lists the node's pods within the service's timeout.
func (s *Service) nodePods(ctx context.Context) ([]*v1.Pod, error) {
	ctx, cancel := s.timeout(ctx)
	defer cancel()
	pods, err := s.node.ListPods(ctx)
	if err != nil {
		return nil, fmt.Errorf("list pods: %w", err)
	}
	return pods, nil
}

// podKey orders pods and marks a page's end: namespace/name.
func podKey(p *v1.Pod) string { return p.Namespace + "/" + p.Name }

func encodeContinue(key string) string { return base64.RawURLEncoding.EncodeToString([]byte(key)) }

func decodeContinue(token string) (string, error) {
	if token == "" {
		return "", nil
	}
	b, err := base64.RawURLEncoding.DecodeString(token)
	if err != nil || !strings.Contains(string(b), "/") {
		return "", wire.BadRequest("continue", "not a token from a previous pods.list reply")
	}
	return string(b), nil
}

// fitPod returns the pod as it goes in a reply and its encoded size: a
// pod whose JSON alone exceeds max is reduced as its published status is
// (publish.FitStatus), so a page is never blocked by one huge pod.
func fitPod(p *v1.Pod, max int) (int, *v1.Pod) {
	data, err := json.Marshal(p)
	if err == nil && len(data) <= max {
		return len(data), p
	}
	data, err = publish.FitStatus(p.DeepCopy(), max+publish.PayloadHeadroom)
	var reduced v1.Pod
	if err != nil || json.Unmarshal(data, &reduced) != nil {
		return len(data), p
	}
	return len(data), &reduced
}

func (s *Service) getPod(ctx context.Context, req micro.Request) (any, error) {
	var r wire.GetPodRequest
	if err := decodeRef(req, &r, &r.Namespace, &r.Name); err != nil {
		return nil, err
	}
	pods, err := s.nodePods(ctx)
	if err != nil {
		return nil, err
	}
	for _, p := range pods {
		if p.Namespace == r.Namespace && p.Name == r.Name {
			_, fitted := fitPod(p, s.maxReply()-1024)
			return wire.GetPodResponse{Pod: fitted}, nil
		}
	}
	return nil, wire.NotFound("pod %s/%s", r.Namespace, r.Name)
}

func (s *Service) describePod(ctx context.Context, req micro.Request) (any, error) {
	var r wire.DescribePodRequest
	if err := decodeRef(req, &r, &r.Namespace, &r.Name); err != nil {
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
	if err := decodeRef(req, &r, &r.Namespace, &r.Name); err != nil {
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
	resp := wire.ExecResponse{ExitCode: code}
	// The streams travel base64-encoded: 3 bytes become 4.
	resp.Stdout, resp.Stderr, resp.Truncated = fitOutput(stdout, stderr, (s.maxReply()-1024)/4*3)
	if resp.Truncated {
		klog.V(2).InfoS("Exec output cut to fit in the reply", "pod", klog.KRef(r.Namespace, r.Name),
			"stdoutBytes", len(stdout), "stderrBytes", len(stderr), "maxBytes", (s.maxReply()-1024)/4*3)
	}
	return resp, nil
}

// fitOutput keeps the start of both streams within max bytes in total,
// each getting half, and a stream that needs less leaving the rest to the
// other.
func fitOutput(stdout, stderr []byte, max int) ([]byte, []byte, bool) {
	if len(stdout)+len(stderr) <= max {
		return stdout, stderr, false
	}
	errRoom := min(len(stderr), max/2)
	outRoom := min(len(stdout), max-errRoom)
	errRoom = min(len(stderr), max-outRoom)
	return stdout[:outRoom], stderr[:errRoom], true
}

func (s *Service) restart(ctx context.Context, req micro.Request) (any, error) {
	var r wire.RestartRequest
	if err := decodeRef(req, &r, &r.Namespace, &r.Name); err != nil {
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
	if err := decodeRef(req, &r, &r.Namespace, &r.Name); err != nil {
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
