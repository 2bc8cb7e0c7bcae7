package wire

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"time"

	"github.com/nats-io/nats.go"
	"github.com/nats-io/nats.go/micro"
	v1 "k8s.io/api/core/v1"

	"github.com/actorlet/actorlet/messages/seconds"
)

// DefaultClientTimeout bounds a request when Client.Timeout is zero.
const DefaultClientTimeout = 30 * time.Second

// Client calls nodes' command services.
type Client struct {
	NC *nats.Conn
	// Timeout bounds each request (exec: added to the command's timeout;
	// log follow: unbounded, ended by ctx).
	Timeout time.Duration
}

func (c *Client) timeout() time.Duration {
	if c.Timeout > 0 {
		return c.Timeout
	}
	return DefaultClientTimeout
}

// Call sends req to node's verb endpoint and decodes the reply into resp.
func (c *Client) Call(ctx context.Context, node, verb string, timeout time.Duration, req, resp any) error {
	return c.call(ctx, CommandSubject(node, verb), node, verb, timeout, req, resp)
}

// CallPod is Call for a pod verb (PodVerbs) about a pod of namespace: it
// goes to the namespaced subject, which an operator scoped to that
// namespace may use (docs/security.md).
func (c *Client) CallPod(ctx context.Context, node, namespace, verb string, timeout time.Duration, req, resp any) error {
	return c.call(ctx, NamespacedCommandSubject(node, namespace, verb), node, verb, timeout, req, resp)
}

func (c *Client) call(ctx context.Context, subject, node, verb string, timeout time.Duration, req, resp any) error {
	if node == "" {
		return fmt.Errorf("%s: node name required", verb)
	}
	data, err := json.Marshal(req)
	if err != nil {
		return fmt.Errorf("encode %s request: %w", verb, err)
	}
	if timeout > 0 {
		var cancel context.CancelFunc
		ctx, cancel = context.WithTimeout(ctx, timeout)
		defer cancel()
	}
	msg, err := c.NC.RequestWithContext(ctx, subject, data)
	switch {
	case errors.Is(err, nats.ErrNoResponders):
		return fmt.Errorf("node %q is not reachable (no responders): is it running?", node)
	case errors.Is(err, context.DeadlineExceeded), errors.Is(err, nats.ErrTimeout):
		return &Error{Code: CodeTimeout, Description: fmt.Sprintf("node %q did not answer %s within %s", node, verb, timeout)}
	case err != nil:
		return fmt.Errorf("%s on node %q: %w", verb, node, err)
	}
	return decodeReply(msg, node, verb, resp)
}

// decodeReply reads a reply: a micro error, or JSON into resp.
func decodeReply(msg *nats.Msg, node, verb string, resp any) error {
	if code := msg.Header.Get(micro.ErrorCodeHeader); code != "" {
		return &Error{Code: parseCode(code), Description: msg.Header.Get(micro.ErrorHeader)}
	}
	if resp == nil {
		return nil
	}
	if err := json.Unmarshal(msg.Data, resp); err != nil {
		return fmt.Errorf("decode %s reply from node %q: %w", verb, node, err)
	}
	return nil
}

// ListPods returns the node's pods with live status (namespace "" = all),
// following the pages of pods.list.
func (c *Client) ListPods(ctx context.Context, node, namespace string) ([]*v1.Pod, error) {
	var all []*v1.Pod
	req := ListPodsRequest{Namespace: namespace}
	// One namespace: its namespaced subject (a scoped operator may use it).
	subject := CommandSubject(node, VerbPodsList)
	if namespace != "" {
		subject = NamespacedCommandSubject(node, namespace, VerbPodsList)
	}
	for {
		var resp ListPodsResponse
		if err := c.call(ctx, subject, node, VerbPodsList, c.timeout(), req, &resp); err != nil {
			return nil, err
		}
		all = append(all, resp.Pods...)
		if resp.Continue == "" {
			return all, nil
		}
		if resp.Continue == req.Continue || len(resp.Pods) == 0 {
			return nil, fmt.Errorf("list pods of node %q: the node repeated page %q", node, resp.Continue)
		}
		req.Continue = resp.Continue
	}
}

// GetPod returns one pod with its live status.
func (c *Client) GetPod(ctx context.Context, node, namespace, name string) (*v1.Pod, error) {
	var resp GetPodResponse
	if err := c.CallPod(ctx, node, namespace, VerbPodsGet, c.timeout(), GetPodRequest{Namespace: namespace, Name: name}, &resp); err != nil {
		return nil, err
	}
	return resp.Pod, nil
}

// DescribePod returns the node's full description of a pod.
func (c *Client) DescribePod(ctx context.Context, node, namespace, name string) (*Description, error) {
	var resp Description
	if err := c.CallPod(ctx, node, namespace, VerbPodsDescribe, c.timeout(), DescribePodRequest{Namespace: namespace, Name: name}, &resp); err != nil {
		return nil, err
	}
	return &resp, nil
}

// Exec runs a command in a container. A non-zero exit is in the response.
func (c *Client) Exec(ctx context.Context, node string, req ExecRequest) (*ExecResponse, error) {
	timeout := DefaultExecTimeout
	if req.TimeoutSeconds > 0 {
		timeout = seconds.Duration(req.TimeoutSeconds)
	}
	var resp ExecResponse
	if err := c.CallPod(ctx, node, req.Namespace, VerbExec, timeout+c.timeout(), req, &resp); err != nil {
		return nil, err
	}
	return &resp, nil
}

// Restart restarts a pod's containers, or one container.
func (c *Client) Restart(ctx context.Context, node, namespace, name, container string) (string, error) {
	var resp Ack
	err := c.CallPod(ctx, node, namespace, VerbRestart, c.timeout(), RestartRequest{Namespace: namespace, Name: name, Container: container}, &resp)
	return resp.Message, err
}

// Evict evicts a pod with an optional grace period and reason.
func (c *Client) Evict(ctx context.Context, node, namespace, name string, gracePeriodSeconds *int64, reason string) (string, error) {
	var resp Ack
	err := c.CallPod(ctx, node, namespace, VerbEvict, c.timeout(), EvictRequest{Namespace: namespace, Name: name, GracePeriodSeconds: gracePeriodSeconds, Reason: reason}, &resp)
	return resp.Message, err
}

// Logs writes a container's log to w. The request's reply subject is a
// private inbox (also sent as req.Inbox; the node refuses any other): log
// chunks arrive there as requests the client acknowledges, and the final
// reply last. With req.Follow it continues until the instance ends or ctx
// is canceled (the node then notices the client went away). It returns why
// a follow ended.
func (c *Client) Logs(ctx context.Context, node string, req LogsRequest, w io.Writer) (string, error) {
	if node == "" {
		return "", fmt.Errorf("%s: node name required", VerbLogs)
	}
	req.Inbox = c.NC.NewInbox() // not a resp-mux inbox: once unsubscribed, the node sees no responders
	msgs := make(chan *nats.Msg, 64)
	sub, err := c.NC.ChanSubscribe(req.Inbox, msgs)
	if err != nil {
		return "", fmt.Errorf("subscribe to log inbox: %w", err)
	}
	defer func() { _ = sub.Unsubscribe() }()
	data, err := json.Marshal(req)
	if err != nil {
		return "", fmt.Errorf("encode %s request: %w", VerbLogs, err)
	}
	if err := c.NC.PublishMsg(&nats.Msg{Subject: NamespacedCommandSubject(node, req.Namespace, VerbLogs), Reply: req.Inbox, Data: data}); err != nil {
		return "", fmt.Errorf("%s on node %q: %w", VerbLogs, node, err)
	}
	var deadline <-chan time.Time
	if !req.Follow { // only ctx ends a follow
		timer := time.NewTimer(c.timeout())
		defer timer.Stop()
		deadline = timer.C
	}
	var writeErr error
	for {
		select {
		case m := <-msgs:
			if m.Header.Get("Status") == "503" {
				return "", fmt.Errorf("node %q is not reachable (no responders): is it running?", node)
			}
			if m.Reply == "" { // the final reply: chunks are acknowledged one by one, none is still in flight
				var resp LogsResponse
				err := decodeReply(m, node, VerbLogs, &resp)
				if writeErr != nil {
					return "", writeErr
				}
				return resp.Ended, err
			}
			if writeErr != nil {
				continue // stop acknowledging: the node sees the client gone
			}
			var ch LogChunk
			if err := json.Unmarshal(m.Data, &ch); err != nil {
				return "", fmt.Errorf("decode log chunk: %w", err)
			}
			if _, err := w.Write(ch.Data); err != nil {
				writeErr = fmt.Errorf("write log: %w", err)
				continue
			}
			_ = m.Respond(nil)
		case <-deadline:
			return "", &Error{Code: CodeTimeout, Description: fmt.Sprintf("node %q did not answer %s within %s", node, VerbLogs, c.timeout())}
		case <-ctx.Done():
			if req.Follow {
				return EndedCanceled, nil
			}
			return "", ctx.Err()
		}
	}
}
