package commands

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"time"

	"github.com/nats-io/nats.go/micro"
	v1 "k8s.io/api/core/v1"
	"k8s.io/klog/v2"

	"github.com/actorlet/actorlet/messages/wire"
)

var errClientGone = errors.New("log client went away")

func (s *Service) logs(ctx context.Context, req micro.Request) (any, error) {
	var r wire.LogsRequest
	if err := decodeRef(req, &r, &r.Namespace, &r.Name); err != nil {
		return nil, err
	}
	switch {
	case r.TailLines != nil && *r.TailLines < 0:
		return nil, wire.BadRequest("tailLines", "must not be negative")
	case r.Follow && r.Inbox == "":
		return nil, wire.BadRequest("inbox", "required to follow")
	case r.Inbox != "" && r.Inbox != req.Reply():
		// Chunks go only where the requester listens for the answer: a
		// caller cannot aim the node's output at another subject.
		return nil, wire.BadRequest("inbox", "must be the request's own reply subject")
	case r.Follow && r.Previous:
		return nil, wire.BadRequest("follow", "a previous instance cannot be followed")
	}
	pctx, cancel := s.timeout(ctx)
	path, err := s.node.LogPath(pctx, r.Namespace, r.Name, r.Container, r.Previous)
	cancel()
	if err != nil {
		return nil, fmt.Errorf("find log of %s/%s: %w", r.Namespace, r.Name, err)
	}
	tail := int64(-1)
	if r.TailLines != nil {
		tail = *r.TailLines
	}
	lr, err := openLogReader(path, tail, r.Timestamps)
	if err != nil {
		return nil, err
	}
	defer lr.Close()

	if r.Inbox == "" {
		// Inline: the last wire.MaxInlineLogBytes, read in batches; memory stays
		// within twice the limit whatever the file's size.
		var data []byte
		truncated := false
		keep := func(lines [][]byte) {
			for _, l := range lines {
				data = append(data, l...)
			}
			if len(data) > 2*wire.MaxInlineLogBytes {
				data = append([]byte(nil), data[len(data)-wire.MaxInlineLogBytes:]...)
				truncated = true
			}
		}
		for {
			lines, n, err := lr.next(maxChunkBytes)
			if err != nil {
				return nil, err
			}
			keep(lines)
			if n == 0 {
				break
			}
		}
		keep(lr.finish())
		if len(data) > wire.MaxInlineLogBytes {
			data, truncated = data[len(data)-wire.MaxInlineLogBytes:], true
		}
		return wire.LogsResponse{Data: data, Truncated: truncated}, nil
	}
	if err := s.drain(ctx, r.Inbox, lr); err != nil {
		return logsEnd(err)
	}
	if !r.Follow {
		if err := s.sendChunks(ctx, r.Inbox, lr.finish()); err != nil {
			return logsEnd(err)
		}
	}
	if !r.Follow {
		return wire.LogsResponse{}, nil
	}
	resp, err := s.follow(ctx, &r, path, lr)
	if s.opts.followEnded != nil {
		ended := "error"
		if lresp, ok := resp.(wire.LogsResponse); ok {
			ended = lresp.Ended
		}
		s.opts.followEnded(ended)
	}
	return resp, err
}

// drain sends everything readable now to the inbox, batch by batch.
func (s *Service) drain(ctx context.Context, inbox string, lr *logReader) error {
	for {
		lines, n, err := lr.next(maxChunkBytes)
		if err != nil {
			return err
		}
		if len(lines) > 0 {
			if err := s.sendChunks(ctx, inbox, lines); err != nil {
				return err
			}
		}
		if n == 0 {
			return nil
		}
	}
}

// follow streams new lines until the container's instance exits or is
// replaced, the client goes away or the service stops.
func (s *Service) follow(ctx context.Context, r *wire.LogsRequest, path string, lr *logReader) (any, error) {
	ticker := time.NewTicker(s.opts.FollowPoll)
	defer ticker.Stop()
	lastSent := time.Now()
	for {
		select {
		case <-ctx.Done():
			return wire.LogsResponse{Ended: wire.EndedCanceled}, nil
		case <-ticker.C:
		}
		sent := false
		for {
			lines, n, err := lr.next(maxChunkBytes)
			if err != nil {
				return nil, err
			}
			if len(lines) > 0 {
				if err := s.sendChunks(ctx, r.Inbox, lines); err != nil {
					return logsEnd(err)
				}
				sent = true
			}
			if n == 0 {
				break
			}
		}
		if !sent && time.Since(lastSent) >= s.opts.FollowKeepAlive {
			// An empty chunk: is the client still there?
			if err := s.sendChunks(ctx, r.Inbox, [][]byte{{}}); err != nil {
				return logsEnd(err)
			}
			sent = true
		}
		if sent {
			lastSent = time.Now()
		}
		state := s.instanceState(ctx, r, path)
		if state == "" {
			continue
		}
		// The writer is done: send the rest of the file and stop.
		if err := s.drain(ctx, r.Inbox, lr); err != nil {
			return logsEnd(err)
		}
		if err := s.sendChunks(ctx, r.Inbox, lr.finish()); err != nil {
			return logsEnd(err)
		}
		klog.V(4).InfoS("Log follow ended", "pod", klog.KRef(r.Namespace, r.Name), "container", r.Container, "reason", state)
		return wire.LogsResponse{Ended: state}, nil
	}
}

func logsEnd(err error) (any, error) {
	switch {
	case errors.Is(err, errClientGone):
		return wire.LogsResponse{Ended: wire.EndedClientGone}, nil
	case errors.Is(err, context.Canceled):
		return wire.LogsResponse{Ended: wire.EndedCanceled}, nil
	}
	return nil, err
}

// instanceState returns "" while the followed instance still runs, else
// why the follow should end.
func (s *Service) instanceState(ctx context.Context, r *wire.LogsRequest, path string) string {
	qctx, cancel := s.timeout(ctx)
	defer cancel()
	current, err := s.node.LogPath(qctx, r.Namespace, r.Name, r.Container, false)
	switch {
	case wire.IsNotFound(err):
		return wire.EndedGone
	case err != nil:
		return "" // transient: try again at the next poll
	case current != path:
		return wire.EndedRestarted
	}
	pods, err := s.node.ListPods(qctx)
	if err != nil {
		return ""
	}
	for _, p := range pods {
		if p.Namespace != r.Namespace || p.Name != r.Name {
			continue
		}
		if cs := findContainerStatus(p, r.Container); cs != nil && cs.State.Running == nil {
			return wire.EndedExited
		}
		return ""
	}
	return wire.EndedGone
}

// findContainerStatus finds the named container's status (any kind of
// container); an empty name matches a pod's only container.
func findContainerStatus(p *v1.Pod, name string) *v1.ContainerStatus {
	all := append(append(append([]v1.ContainerStatus(nil), p.Status.ContainerStatuses...), p.Status.InitContainerStatuses...), p.Status.EphemeralContainerStatuses...)
	if name == "" && len(p.Status.ContainerStatuses) == 1 {
		return &p.Status.ContainerStatuses[0]
	}
	for i := range all {
		if all[i].Name == name {
			return &all[i]
		}
	}
	return nil
}

// sendChunks sends lines to the client's inbox in acknowledged chunks.
func (s *Service) sendChunks(ctx context.Context, inbox string, lines [][]byte) error {
	var buf []byte
	flush := func() error {
		if buf == nil {
			return nil
		}
		data, err := json.Marshal(wire.LogChunk{Data: buf})
		if err != nil {
			return fmt.Errorf("encode log chunk: %w", err)
		}
		buf = nil
		actx, cancel := context.WithTimeout(ctx, ChunkAckTimeout)
		defer cancel()
		if _, err := s.nc.RequestWithContext(actx, inbox, data); err != nil {
			if ctx.Err() != nil {
				return ctx.Err()
			}
			return fmt.Errorf("send log chunk to %q: %w: %v", inbox, errClientGone, err)
		}
		return nil
	}
	if len(lines) == 1 && len(lines[0]) == 0 {
		buf = []byte{} // keep-alive
	}
	for _, l := range lines {
		if len(buf)+len(l) > maxChunkBytes {
			if err := flush(); err != nil {
				return err
			}
		}
		buf = append(buf, l...)
	}
	return flush()
}
