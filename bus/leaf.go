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
// hub's bucket, only this node's keys and the fleet's.
func edgeSource(bucket, node, hubDomain string) *jetstream.StreamSource {
	var tr []jetstream.SubjectTransformConfig
	for _, f := range []string{wire.DesiredNodeWatch(node), wire.DesiredFleetWatch} {
		subj := "$KV." + bucket + "." + f
		tr = append(tr, jetstream.SubjectTransformConfig{Source: subj, Destination: subj})
	}
	return &jetstream.StreamSource{Name: wire.BucketStream(bucket), Domain: hubDomain, SubjectTransforms: tr}
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
	for _, cfg := range append(ProtocolBuckets(ProtocolSettings{}), wire.ObjectBuckets()...) {
		if err := wire.RetryTransient(ctx, func(ctx context.Context) error {
			if slices.Contains(edgeSourcedBuckets, cfg.Bucket) {
				cfg.Sources = []*jetstream.StreamSource{edgeSource(cfg.Bucket, c.edgeNode, c.hubDomain)}
				return ensureEdgeSourced(ctx, js, cfg)
			}
			_, err := wire.EnsureBucket(ctx, js, cfg, false)
			return err
		}); err != nil {
			return err
		}
	}
	return wire.RetryTransient(ctx, func(ctx context.Context) error {
		_, err := wire.EnsureStream(ctx, js, wire.EventsStreamConfig(wire.ProtocolSettings{}), false)
		return err
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
// when Redial switches the agent to node credentials: it reads the hub's
// keys from the stream leader and rewrites central keys of the edge's own
// server, which node permissions do not allow (docs/security.md).
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

// reconcileEdgeBucket reconciles one bucket; a bucket the hub does not
// have (ConfigMaps and Secrets before an operator's node add) has nothing
// central to win and is skipped.
func (c *Conn) reconcileEdgeBucket(ctx context.Context, bucket string) (int, error) {
	hubJS, err := jetstream.NewWithDomain(c.edgeNC, c.hubDomain)
	if err != nil {
		return 0, err
	}
	hub, err := hubJS.KeyValue(ctx, bucket)
	if errors.Is(err, jetstream.ErrBucketNotFound) && bucket != wire.DesiredBucket {
		return 0, nil
	}
	if err != nil {
		return 0, fmt.Errorf("open the hub's %s: %w", bucket, err)
	}
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
	changed := 0
	for _, filter := range []string{wire.DesiredNodeWatch(c.edgeNode), wire.DesiredFleetWatch} {
		keys, err := listKeys(ctx, hub, bucket, filter)
		if err != nil {
			return changed, err
		}
		for _, k := range keys {
			// From the hub's leader: a replica catching up could hold an
			// older value, which must not overwrite a newer one here.
			rctx, cancel := context.WithTimeout(ctx, edgeRequestTimeout)
			want, err := LeaderGet(rctx, c.edgeNC, c.hubDomain, bucket, k)
			cancel()
			if errors.Is(err, ErrKeyGone) {
				continue // deleted meanwhile: the source brings the delete
			}
			if err != nil {
				return changed, err
			}
			have, err := local.Get(ctx, k)
			if err == nil && bytes.Equal(have.Value(), want.Value()) {
				continue
			}
			var rev uint64
			if err == nil {
				rev = have.Revision()
			} else if !errors.Is(err, jetstream.ErrKeyNotFound) {
				return changed, err
			}
			// Conditioned on what was read: a central write the source
			// delivers meanwhile is newer and must not be overwritten.
			if rev == 0 {
				_, err = local.Create(ctx, k, want.Value())
			} else {
				_, err = local.Update(ctx, k, want.Value(), rev)
			}
			if err == nil {
				changed++
			}
		}
	}
	return changed, nil
}

// listKeys lists the hub's keys under filter, at most edgeReconcileLimit,
// within edgeRequestTimeout.
func listKeys(ctx context.Context, hub jetstream.KeyValue, bucket, filter string) ([]string, error) {
	ctx, cancel := context.WithTimeout(ctx, edgeRequestTimeout)
	defer cancel()
	lister, err := hub.ListKeysFiltered(ctx, filter)
	if err != nil {
		return nil, fmt.Errorf("list the hub's %s %s: %w", bucket, filter, err)
	}
	defer func() { _ = lister.Stop() }()
	var keys []string
	for k := range lister.Keys() {
		if len(keys) == edgeReconcileLimit {
			klog.InfoS("Edge reconcile stopped at its key limit", "bucket", bucket, "filter", filter, "limit", edgeReconcileLimit)
			break
		}
		keys = append(keys, k)
	}
	if ctx.Err() != nil {
		return nil, fmt.Errorf("list the hub's %s %s: %w", bucket, filter, ctx.Err())
	}
	return keys, nil
}
