package main

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"sort"
	"strings"
	"time"

	"github.com/nats-io/nats.go/jetstream"
	v1 "k8s.io/api/core/v1"

	"github.com/actorlet/actorlet/messages/wire"
)

func (c *cli) events(ctx context.Context, args []string) error {
	fs := c.flags("events")
	ns := fs.String("n", "", "namespace (default: all)")
	node := fs.String("node", "", "only events of this node")
	watch := fs.Bool("w", false, "after listing, print events as they arrive")
	pos, _, err := parse(fs, args)
	if err != nil {
		return err
	}
	if len(pos) > 0 {
		fmt.Fprintf(c.stderr, "error: unexpected arguments %v\n", pos)
		fs.Usage()
		return errUsage
	}
	cn, err := c.connect(ctx)
	if err != nil {
		return err
	}
	evs, it, err := c.storedEvents(ctx, cn, eventFilter(*node, *ns))
	if err != nil {
		return err
	}
	defer it.Stop()
	if len(evs) == 0 && !*watch {
		fmt.Fprintln(c.stderr, "No events found")
		return nil
	}
	tw := newTable(c.stdout)
	fmt.Fprintln(tw, "LAST SEEN\tTYPE\tREASON\tOBJECT\tMESSAGE")
	for _, e := range evs {
		fmt.Fprintln(tw, c.eventLine(e))
	}
	if err := tw.Flush(); err != nil || !*watch {
		return err
	}
	for {
		m, err := it.Next(jetstream.NextContext(ctx))
		if ctx.Err() != nil {
			return nil
		}
		if err != nil {
			return fmt.Errorf("watch %s: %w", wire.EventsStream, err)
		}
		if e := c.decodeEvent(m); e != nil {
			tw := newTable(c.stdout)
			fmt.Fprintln(tw, c.eventLine(e))
			tw.Flush()
		}
	}
}

// storedEvents reads the events stream's messages on filter: the latest
// copy of each event (a repeat is republished under the same name with a
// higher count), oldest first, and the reader positioned after them for
// watching (the caller stops it).
//
// One ordered consumer is read through one Messages iterator: its Next
// (a fetch) recreates the ephemeral consumer for every message, and on a
// cluster the pull sent right after a creation can reach the client's
// server before the interest of the new consumer (on another server)
// does: "no responders available for request" after a few messages. The
// iterator creates the consumer once and, should that race still happen,
// recreates it where it left off.
func (c *cli) storedEvents(ctx context.Context, cn *conn, filter string) ([]*v1.Event, jetstream.MessagesContext, error) {
	qctx, cancel := context.WithTimeout(ctx, c.g.timeout)
	defer cancel()
	cons, err := cn.js.OrderedConsumer(qctx, wire.EventsStream, jetstream.OrderedConsumerConfig{
		FilterSubjects: []string{filter},
		DeliverPolicy:  jetstream.DeliverAllPolicy,
	})
	if errors.Is(err, jetstream.ErrStreamNotFound) {
		return nil, nil, fmt.Errorf("stream %s does not exist: is any actorlet node running on this bus?", wire.EventsStream)
	}
	if err != nil {
		return nil, nil, fmt.Errorf("read %s: %w", wire.EventsStream, err)
	}
	info, err := cons.Info(qctx)
	if err != nil {
		return nil, nil, fmt.Errorf("read %s: %w", wire.EventsStream, err)
	}
	it, err := cons.Messages()
	if err != nil {
		return nil, nil, fmt.Errorf("read %s: %w", wire.EventsStream, err)
	}
	latest := map[string]int{} // event name → index in evs
	var evs []*v1.Event
	for pending := info.NumPending; pending > 0; {
		m, err := it.Next(jetstream.NextMaxWait(c.g.timeout))
		if err != nil {
			it.Stop()
			return nil, nil, fmt.Errorf("read %s (%d events left): %w", wire.EventsStream, pending, err)
		}
		meta, _ := m.Metadata()
		if e := c.decodeEvent(m); e != nil {
			if i, ok := latest[e.Name]; ok && e.Name != "" {
				evs[i] = e
			} else {
				latest[e.Name] = len(evs)
				evs = append(evs, e)
			}
		}
		if meta == nil {
			break
		}
		pending = meta.NumPending
	}
	sort.SliceStable(evs, func(i, j int) bool { return eventTime(evs[i]).Before(eventTime(evs[j])) })
	return evs, it, nil
}

// eventFilter is the subject filter of events for a node and namespace.
func eventFilter(node, ns string) string {
	return wire.EventSubjectPrefix + "." + statusFilter(ns, node)
}

func (c *cli) decodeEvent(m jetstream.Msg) *v1.Event {
	var e v1.Event
	if err := json.Unmarshal(m.Data(), &e); err != nil {
		fmt.Fprintf(c.stderr, "warning: event on %s: %v\n", m.Subject(), err)
		return nil
	}
	return &e
}

// eventTime is when an event was last seen.
func eventTime(e *v1.Event) time.Time {
	switch {
	case !e.LastTimestamp.IsZero():
		return e.LastTimestamp.Time
	case !e.EventTime.IsZero():
		return e.EventTime.Time
	}
	return e.FirstTimestamp.Time
}

func (c *cli) eventLine(e *v1.Event) string {
	obj := strings.ToLower(e.InvolvedObject.Kind) + "/" + e.InvolvedObject.Name
	if e.Count > 1 {
		obj += fmt.Sprintf(" (x%d)", e.Count)
	}
	return strings.Join([]string{age(eventTime(e), c.clock.Now()), e.Type, e.Reason, obj, e.Message}, "\t")
}
