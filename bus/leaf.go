package bus

import (
	"bytes"
	"context"
	"errors"
	"fmt"
	"net/url"
	"slices"
	"strings"
	"time"

	"github.com/nats-io/nats.go/jetstream"
	"k8s.io/klog/v2"

	"github.com/actorlet/actorlet/messages/wire"
	"github.com/actorlet/actorlet/messages/wire/busauth"
)

// Edge nodes: an agent given a leaf URL runs its embedded nats-server as a
// leaf node of the fleet's cluster (the hub), in a JetStream domain of its
// own. The node's buckets live in its own domain, so local pods, status,
// heartbeats, events and commands keep working while the uplink is down:
//
//   - actorlet_desired (edge) sources the hub's actorlet_desired, filtered to
//     node.<node>.> and fleet.>, and also takes local writes (a local
//     operator's apply). Central writes made while the uplink was down
//     arrive, in the hub's order, when it comes back.
//   - actorlet_configmaps and actorlet_secrets (edge) source the hub's the
//     same way (node.<node>.> and fleet.>), so local pods get the objects
//     they reference, through a partition too; central wins as for desired
//     pods.
//   - actorlet_status, actorlet_nodes and ACTORLET_EVENTS (edge) are plain
//     local ones; the hub's buckets source them (Bootstrap with EdgeNodes),
//     each filtered to the node's own keys, so what was written during the
//     partition reaches the hub afterwards, in order.
//
// $KV.> is denied on the leaf connection both ways: a key is stored in one
// domain only and its acknowledgement comes from that domain's stream.
// Events (actorlet.events.>) are denied too: both sides' event streams
// capture that subject, so an event published on one side would also be
// stored by the other's stream directly, besides the hub's source — twice
// on the hub, and the hub's events on the edge. They cross once, through
// the source, edge to hub.
const (
	// DefaultHubDomain is the JetStream domain of the fleet's cluster.
	DefaultHubDomain = "hub"
)

// leafDenied are the subjects a leaf connection neither imports nor exports.
var leafDenied = []string{"$KV.>", wire.EventsSubjects}

func parseLeafURLs(s string) ([]*url.URL, error) {
	var out []*url.URL
	for _, p := range strings.Split(s, ",") {
		if p = strings.TrimSpace(p); p == "" {
			continue
		}
		u, err := url.Parse(p)
		if err != nil || u.Host == "" {
			return nil, fmt.Errorf("leafURL %q: not a URL like nats-leaf://hub:7422", wire.RedactURLs(p))
		}
		out = append(out, u)
	}
	if len(out) == 0 {
		return nil, errors.New("leafURL: no URL given")
	}
	return out, nil
}

// edgeSourcedBuckets are the buckets an edge node keeps as copies of the
// hub's (its keys and the fleet's), central winning.
var edgeSourcedBuckets = []string{wire.DesiredBucket, wire.ConfigMapsBucket, wire.SecretsBucket}

// edgeSource is the source of an edge node's copy of a hub bucket: the
// hub's bucket, only this node's keys and the fleet's, read through the
// consumer an operator provisioned for it on the hub (wire.EdgeConsumer):
// the uplink only resets it and receives its deliveries.
func edgeSource(bucket, node, hubDomain string) *jetstream.StreamSource {
	var tr []jetstream.SubjectTransformConfig
	for _, f := range []string{wire.DesiredNodeWatch(node), wire.DesiredFleetWatch} {
		subj := "$KV." + bucket + "." + f
		tr = append(tr, jetstream.SubjectTransformConfig{Source: subj, Destination: subj})
	}
	stream := wire.BucketStream(bucket)
	return &jetstream.StreamSource{Name: stream, Domain: hubDomain, SubjectTransforms: tr,
		Consumer: &jetstream.StreamConsumerSource{Name: wire.EdgeConsumer(node), DeliverSubject: wire.EdgeDownSubject(node, stream)}}
}

// ensureEdgeProtocol creates an edge node's buckets and stream in its own
// domain. The embedded server is the agent's own, so the desired bucket is
// brought to source the hub even if it existed (a node turned into an edge
// node keeps its local keys).
func (c *Conn) ensureEdgeProtocol(ctx context.Context) error {
	js := c.JS
	// nats-server retries a failed stream source with a back-off that grows
	// by 10 s per failure: let the uplink come up first (briefly; an edge
	// may well start cut off) so the hub source is set up at once.
	wait := time.NewTimer(edgeUplinkWait)
	defer wait.Stop()
	for !c.LeafConnected() {
		select {
		case <-ctx.Done():
			return ctx.Err()
		case <-wait.C:
			klog.InfoS("Edge uplink not up yet; starting cut off", "hubDomain", c.hubDomain)
		case <-time.After(50 * time.Millisecond):
			continue
		}
		break
	}
	for _, cfg := range append(wire.ProtocolBuckets(wire.ProtocolSettings{}), wire.ObjectBuckets()...) {
		if err := wire.RetryTransient(ctx, func(ctx context.Context) error {
			if slices.Contains(edgeSourcedBuckets, cfg.Bucket) {
				cfg.Sources = []*jetstream.StreamSource{edgeSource(cfg.Bucket, c.edgeNode, c.hubDomain)}
				// The reconciler restores central values from this history.
				cfg.History = max(cfg.History, wire.DesiredHistory)
				return ensureEdgeSourced(ctx, js, cfg)
			}
			_, err := wire.EnsureBucket(ctx, js, cfg, false)
			return err
		}); err != nil {
			return err
		}
	}
	if err := wire.RetryTransient(ctx, func(ctx context.Context) error {
		_, err := wire.EnsureStream(ctx, js, wire.EventsStreamConfig(wire.ProtocolSettings{}), false)
		return err
	}); err != nil {
		return err
	}
	// The consumers the hub's sources of this node's status, heartbeats
	// and events read (its uplink user may not create any on the hub, and
	// the hub's may not on this server: they only reset these).
	return wire.RetryTransient(ctx, func(ctx context.Context) error {
		return busauth.EnsureHubConsumers(ctx, js, c.edgeNode)
	})
}

// ensureEdgeSourced creates an edge bucket sourcing the hub's, or makes an
// existing one source it.
func ensureEdgeSourced(ctx context.Context, js jetstream.JetStream, cfg jetstream.KeyValueConfig) error {
	s, err := js.Stream(ctx, "KV_"+cfg.Bucket)
	switch {
	case errors.Is(err, jetstream.ErrStreamNotFound):
		if _, err := js.CreateKeyValue(ctx, cfg); err != nil && !errors.Is(err, jetstream.ErrBucketExists) {
			return fmt.Errorf("create edge bucket %q sourcing the hub's: %w", cfg.Bucket, err)
		}
		klog.InfoS("Created edge bus bucket sourcing the hub", "bucket", cfg.Bucket, "hubFilters", cfg.Sources[0].SubjectTransforms)
		return nil
	case err != nil:
		return fmt.Errorf("look up edge bucket %q: %w", cfg.Bucket, err)
	}
	if wire.SameSources(s.CachedInfo().Config.Sources, cfg.Sources) {
		return nil
	}
	if _, err := js.UpdateKeyValue(ctx, cfg); err != nil {
		return fmt.Errorf("make edge bucket %q source the hub's: %w", cfg.Bucket, err)
	}
	klog.InfoS("Edge bus bucket now sources the hub", "bucket", cfg.Bucket)
	return nil
}

// Central desired state wins on an edge node. Central writes reach the
// edge's desired bucket through its source, in the hub's order, after any
// local write made while the uplink was down — so where both changed a key,
// central's value is the latest. A key a local operator changed that
// central did not touch is put back to the hub's value by the reconciler:
// after every uplink (re)connect, once the source has caught up, and every
// edgeReconcilePeriod while connected. Keys only the edge has (a local
// operator's own pods) are left alone.
const (
	edgeReconcilePeriod  = 5 * time.Minute
	edgeCheckPeriod      = time.Second
	edgeUplinkWait       = 5 * time.Second
	edgeReconcileTimeout = time.Minute // one pass
	edgeReconcileLimit   = 10000       // keys compared per pass
	// edgeRequestTimeout bounds each request of a pass (a listing, one
	// read): a request sent just as the uplink comes back can go
	// unanswered, and must not hold the pass — and so the reconcile the
	// reconnect asked for — until edgeReconcileTimeout.
	edgeRequestTimeout = 10 * time.Second
)

// startEdgeReconciler starts the reconciler of an edge node's connection
// on the connection Connect opened. The reconciler keeps that connection
// when Redial switches the agent to node credentials: it reads its own
// server's streams and rewrites central keys there, which node
// permissions do not allow (docs/security.md).
func (c *Conn) startEdgeReconciler() {
	if !c.Edge() {
		return
	}
	c.edgeNC, c.edgeJS = c.NC, c.JS
	c.reconcilerStop, c.reconcilerDone = make(chan struct{}), make(chan struct{})
	go c.runEdgeReconciler(c.reconcilerStop, c.reconcilerDone)
}

// stopEdgeReconciler stops the reconciler, if one runs, and waits for it.
func (c *Conn) stopEdgeReconciler() {
	if c.reconcilerDone == nil {
		return
	}
	close(c.reconcilerStop)
	<-c.reconcilerDone
	c.reconcilerStop, c.reconcilerDone = nil, nil
}

// runEdgeReconciler runs until closing is closed.
func (c *Conn) runEdgeReconciler(closing, done chan struct{}) {
	defer close(done)
	base, stop := context.WithCancel(context.Background())
	defer stop()
	go func() {
		select {
		case <-closing:
			stop()
		case <-base.Done():
		}
	}()
	wasUp := false
	var last time.Time
	tick := time.NewTicker(edgeCheckPeriod)
	defer tick.Stop()
	for {
		select {
		case <-closing:
			return
		case <-tick.C:
		}
		up := c.LeafConnected()
		due := up && (!wasUp || time.Since(last) >= edgeReconcilePeriod)
		wasUp = up
		if !due {
			continue
		}
		ctx, cancel := context.WithTimeout(base, edgeReconcileTimeout)
		n, err := c.reconcileEdge(ctx)
		cancel()
		if err != nil {
			klog.V(2).InfoS("Edge desired state not reconciled with the hub yet", "err", err)
			wasUp = false // try again next tick
			continue
		}
		last = time.Now()
		if n > 0 {
			klog.InfoS("Local changes to central keys (desired pods, ConfigMaps, Secrets) replaced by the hub's", "keys", n)
		}
	}
}

// reconcileEdge puts the hub's value back on every central key whose edge
// value differs, in each bucket the edge sources from the hub (desired
// pods, ConfigMaps, Secrets), once the edge's source has caught up. It
// returns how many keys it changed.
func (c *Conn) reconcileEdge(ctx context.Context) (int, error) {
	changed := 0
	for _, bucket := range edgeSourcedBuckets {
		n, err := c.reconcileEdgeBucket(ctx, bucket)
		changed += n
		if err != nil {
			return changed, fmt.Errorf("%s: %w", bucket, err)
		}
	}
	return changed, nil
}

// reconcileEdgeBucket reconciles one bucket without asking the hub
// anything (the uplink may only reset its consumers): the hub's value of a
// central key is its newest revision that arrived through the source
// (it carries the Nats-Stream-Source header). A key whose newest revision
// is a local write, while an older one came from the hub, gets the hub's
// value back — unless the hub's newest is a delete (a local pod re-created
// after central removed it stays, as before). Keys the hub never sent
// (a local operator's own) are left alone. The edge keeps DesiredHistory
// revisions of each key; a central value pushed out of them by more local
// writes is not restored.
func (c *Conn) reconcileEdgeBucket(ctx context.Context, bucket string) (int, error) {
	local, err := c.edgeJS.KeyValue(ctx, bucket)
	if err != nil {
		return 0, err
	}
	st, err := c.edgeJS.Stream(ctx, wire.BucketStream(bucket))
	if err != nil {
		return 0, err
	}
	info, err := st.Info(ctx)
	if err != nil {
		return 0, err
	}
	if len(info.Sources) == 0 || info.Sources[0].Lag > 0 || info.Sources[0].Active < 0 || info.Sources[0].Error != nil {
		return 0, errors.New("the bucket's source from the hub has not caught up")
	}
	latest, err := latestEntries(ctx, local, bucket, []string{wire.DesiredNodeWatch(c.edgeNode), wire.DesiredFleetWatch})
	if err != nil {
		return 0, err
	}
	changed := 0
	for _, e := range latest {
		central, now, ok, err := centralValue(ctx, st, local, e)
		if err != nil {
			return changed, err
		}
		if !ok || (now.Operation() == jetstream.KeyValuePut && bytes.Equal(now.Value(), central)) {
			continue
		}
		// Conditioned on what was read: a central write the source
		// delivers meanwhile is newer and must not be overwritten.
		if _, err := local.Update(ctx, e.Key(), central, now.Revision()); err == nil {
			changed++
		}
	}
	return changed, nil
}

// sourced reports whether revision rev of the edge's stream came from the
// hub (through its source).
func sourced(ctx context.Context, st jetstream.Stream, rev uint64) (bool, error) {
	m, err := st.GetMsg(ctx, rev)
	if errors.Is(err, jetstream.ErrMsgNotFound) {
		return false, nil
	}
	if err != nil {
		return false, err
	}
	return m.Header.Get(streamSourceHeader) != "", nil
}

// streamSourceHeader marks a message a stream got through a source
// (nats-server's JSStreamSource).
const streamSourceHeader = "Nats-Stream-Source"

// centralValue is the hub's value of e's key when e, its newest revision
// (metadata only), is a local change of a key the hub sent; now is that
// newest revision with its value. ok is false when e came from the hub
// itself, the hub never sent the key (or its revision left the history),
// or the hub's newest is a delete.
func centralValue(ctx context.Context, st jetstream.Stream, kv jetstream.KeyValue, e jetstream.KeyValueEntry) (central []byte, now jetstream.KeyValueEntry, ok bool, err error) {
	if ok, err := sourced(ctx, st, e.Revision()); err != nil || ok {
		return nil, nil, false, err
	}
	hist, err := kv.History(ctx, e.Key())
	if errors.Is(err, jetstream.ErrKeyNotFound) {
		return nil, nil, false, nil
	}
	if err != nil || len(hist) == 0 {
		return nil, nil, false, err
	}
	now = hist[len(hist)-1]
	for i := len(hist) - 1; i >= 0; i-- {
		h := hist[i]
		ok, err := sourced(ctx, st, h.Revision())
		if err != nil {
			return nil, nil, false, err
		}
		if ok {
			return h.Value(), now, h.Operation() == jetstream.KeyValuePut, nil
		}
	}
	return nil, nil, false, nil
}

// latestEntries is the newest revision (deletes included) of every key of
// kv under filters, at most edgeReconcileLimit, within edgeRequestTimeout.
func latestEntries(ctx context.Context, kv jetstream.KeyValue, bucket string, filters []string) ([]jetstream.KeyValueEntry, error) {
	ctx, cancel := context.WithTimeout(ctx, edgeRequestTimeout)
	defer cancel()
	w, err := kv.WatchFiltered(ctx, filters, jetstream.MetaOnly())
	if err != nil {
		return nil, fmt.Errorf("list %s %v: %w", bucket, filters, err)
	}
	defer func() { _ = w.Stop() }()
	var out []jetstream.KeyValueEntry
	for {
		select {
		case <-ctx.Done():
			return nil, fmt.Errorf("list %s %v: %w", bucket, filters, ctx.Err())
		case e := <-w.Updates():
			if e == nil {
				return out, nil
			}
			if len(out) == edgeReconcileLimit {
				klog.InfoS("Edge reconcile stopped at its key limit", "bucket", bucket, "limit", edgeReconcileLimit)
				return out, nil
			}
			out = append(out, e)
		}
	}
}
