package bus

import (
	"context"
	"fmt"

	"github.com/actorlet/actorlet/messages/wire"
)

// EnsureProtocol is EnsureProtocolWith default settings (one replica).
func (c *Conn) EnsureProtocol(ctx context.Context) error {
	return c.EnsureProtocolWith(ctx, wire.ProtocolSettings{})
}

// EnsureProtocolWith is EnsurePodProtocolWith followed by
// EnsureObjectBuckets: everything the protocol needs, as an operator (or
// the embedded server's admin set-up) creates it.
func (c *Conn) EnsureProtocolWith(ctx context.Context, s wire.ProtocolSettings) error {
	if err := c.EnsurePodProtocolWith(ctx, s); err != nil {
		return err
	}
	if c.Edge() {
		return nil // an edge node's object buckets source the hub's (ensureEdgeProtocol)
	}
	return c.EnsureObjectBuckets(ctx)
}

// EnsurePodProtocolWith is what an agent runs at start-up (on an edge
// node, ensureEdgeProtocol: its object buckets too): it creates the
// buckets and stream that are missing, with s. What exists is the
// operator's and is left alone — replicas, placement, history, storage and
// limits are never changed, so an agent needs no right to edit streams and
// never lowers a setting raised by hand or by Bootstrap. The one exception
// is a stream that no longer captures the protocol's subjects: without
// them events are lost, so its subjects are repaired. Settings that differ
// from s are logged. The object buckets are not part of it: a node starts
// without them (EnsureObjectBuckets).
//
// JetStream answers "temporarily unavailable" while a clustered meta leader
// or stream leader is being elected; those errors are retried until ctx
// ends.
func (c *Conn) EnsurePodProtocolWith(ctx context.Context, s wire.ProtocolSettings) error {
	js := c.JS
	if err := s.Validate(); err != nil {
		return fmt.Errorf("bus protocol settings: %w", err)
	}
	if c.Edge() {
		return c.ensureEdgeProtocol(ctx)
	}
	for _, cfg := range wire.ProtocolBuckets(s) {
		if err := wire.RetryTransient(ctx, func(ctx context.Context) error {
			_, err := wire.EnsureBucket(ctx, js, cfg, false)
			return err
		}); err != nil {
			return err
		}
	}
	return wire.RetryTransient(ctx, func(ctx context.Context) error {
		_, err := wire.EnsureStream(ctx, js, wire.EventsStreamConfig(s), false)
		return err
	})
}

// EnsureObjectBuckets creates the ConfigMap and Secret buckets
// (ObjectBuckets) if they are missing, as EnsurePodProtocolWith does for
// the others. A node's credentials may not create them: its object store
// then waits until an operator has.
func (c *Conn) EnsureObjectBuckets(ctx context.Context) error {
	return wire.EnsureObjectBuckets(ctx, c.JS)
}
