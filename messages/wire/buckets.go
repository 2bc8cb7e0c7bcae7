package wire

// The protocol's buckets and stream: their settings, the operator's
// Bootstrap and the agent's EnsureBucket/EnsureStream. They live here, with
// no server or agent dependency, so actorletctl and the agent share them.

import (
	"context"
	"errors"
	"fmt"
	"slices"
	"strings"
	"time"

	"github.com/nats-io/nats.go"
	"github.com/nats-io/nats.go/jetstream"
	"k8s.io/klog/v2"
)

// MaxEdgeNodes bounds the sources of one hub bucket (one per edge node).
const MaxEdgeNodes = 256

const edgeDomainPrefix = "edge-"

// Settings of the protocol's buckets and stream.
const (
	DesiredHistory = 5
	StatusHistory  = 1
	NodesHistory   = 1
	EventsMaxAge   = time.Hour
)

// Limits of ProtocolSettings. JetStream allows at most 5 replicas.
const (
	MaxReplicas      = 5
	MaxPlacementTags = 16
	MaxPlacementTag  = 64 // bytes per tag
)

// EventsSubjects is the subject filter of EventsStream.
const EventsSubjects = EventSubjectPrefix + ".>"

// ProtocolSettings are the choices an operator makes once for a fleet's
// buckets and stream: how many copies JetStream keeps, and where. They only
// apply when a bucket or the stream is created (by the first agent, with
// --nats-replicas) or by an operator's Bootstrap; EnsureProtocol never
// changes them on what exists.
type ProtocolSettings struct {
	// Replicas is the number of copies of each bucket and the stream
	// (1..MaxReplicas; 0 means 1). A 3-server cluster wants 3.
	Replicas int
	// Cluster and Tags, optional, place the buckets and stream on the named
	// cluster and on servers carrying every tag (server_tags).
	Cluster string
	Tags    []string
	// EdgeNodes, for Bootstrap on the hub: the hub's status and nodes
	// buckets and events stream source each edge node's (filtered to its
	// own keys), so what an edge node reports while cut off arrives later.
	EdgeNodes []string
}

// Validate checks the settings, naming the field and the limit.
func (s ProtocolSettings) Validate() error {
	var errs []error
	if s.Replicas < 0 || s.Replicas > MaxReplicas {
		errs = append(errs, fmt.Errorf("replicas %d: must be 1..%d (0 means 1)", s.Replicas, MaxReplicas))
	}
	if len(s.Tags) > MaxPlacementTags {
		errs = append(errs, fmt.Errorf("placement tags: %d given, at most %d", len(s.Tags), MaxPlacementTags))
	}
	for _, tag := range s.Tags {
		if tag == "" || len(tag) > MaxPlacementTag || strings.ContainsAny(tag, " \t\r\n,") {
			errs = append(errs, fmt.Errorf("placement tag %q: must be 1..%d bytes without spaces or commas", truncate(tag, MaxPlacementTag), MaxPlacementTag))
		}
	}
	if len(s.EdgeNodes) > MaxEdgeNodes {
		errs = append(errs, fmt.Errorf("edge nodes: %d given, at most %d per hub (one stream source each)", len(s.EdgeNodes), MaxEdgeNodes))
	}
	for _, n := range s.EdgeNodes {
		if n == "" || len(n) > 253 || strings.ContainsAny(n, " \t\r\n,*>_") {
			errs = append(errs, fmt.Errorf("edge node %q: not a node name", truncate(n, MaxPlacementTag)))
		}
	}
	if len(s.Cluster) > MaxPlacementTag || strings.ContainsAny(s.Cluster, " \t\r\n,") {
		errs = append(errs, fmt.Errorf("placement cluster %q: must be at most %d bytes without spaces or commas", truncate(s.Cluster, MaxPlacementTag), MaxPlacementTag))
	}
	return errors.Join(errs...)
}

func truncate(s string, n int) string {
	if len(s) <= n {
		return s
	}
	return s[:n] + "…"
}

func (s ProtocolSettings) replicas() int { return max(s.Replicas, 1) }

func (s ProtocolSettings) placement() *jetstream.Placement {
	if s.Cluster == "" && len(s.Tags) == 0 {
		return nil
	}
	return &jetstream.Placement{Cluster: s.Cluster, Tags: slices.Clone(s.Tags)}
}

// ProtocolBuckets returns the KV bucket configurations of the protocol with
// the given replicas and placement.
func ProtocolBuckets(s ProtocolSettings) []jetstream.KeyValueConfig {
	r, p := s.replicas(), s.placement()
	return []jetstream.KeyValueConfig{
		{Bucket: DesiredBucket, Description: "actorlet desired pods (operators write, nodes watch)", History: DesiredHistory, Storage: jetstream.FileStorage, Replicas: r, Placement: p},
		{Bucket: StatusBucket, Description: "actorlet pod status per node", History: StatusHistory, Storage: jetstream.FileStorage, Replicas: r, Placement: p,
			Sources: hubEdgeSources("KV_"+StatusBucket, "$KV."+StatusBucket, s.EdgeNodes)},
		{Bucket: NodesBucket, Description: "actorlet node registration and heartbeat", History: NodesHistory, Storage: jetstream.FileStorage, Replicas: r, Placement: p,
			Sources: hubEdgeSources("KV_"+NodesBucket, "$KV."+NodesBucket, s.EdgeNodes)},
	}
}

// EventsStreamConfig is the configuration of EventsStream.
func EventsStreamConfig(s ProtocolSettings) jetstream.StreamConfig {
	return jetstream.StreamConfig{
		Name:        EventsStream,
		Description: "actorlet events (v1.Event JSON) per node and pod",
		Subjects:    []string{EventsSubjects},
		Retention:   jetstream.LimitsPolicy,
		Discard:     jetstream.DiscardOld,
		MaxAge:      EventsMaxAge,
		Storage:     jetstream.FileStorage,
		Replicas:    s.replicas(),
		Placement:   s.placement(),
		Sources:     hubEdgeSources(EventsStream, EventSubjectPrefix, s.EdgeNodes),
	}
}

// BootstrapResult says what Bootstrap did to one bucket or stream.
type BootstrapResult struct {
	Name   string // bucket or stream name
	Action string // "created", "updated" or "unchanged"
	// Replicas and Placement as found on the server afterwards.
	Replicas int
	Cluster  string
	Tags     []string
}

// Bootstrap is what an operator runs once per fleet (actorletctl
// bootstrap): it creates every bucket and stream of the protocol (the
// desired, status and nodes buckets, the ConfigMap and Secret buckets and
// the events stream) with s, or brings existing
// ones to the protocol's settings and to s (replicas may go up or down:
// this is the operator's explicit choice). It needs the right to create and
// edit streams; agents never call it. Data is kept.
func Bootstrap(ctx context.Context, js jetstream.JetStream, s ProtocolSettings) ([]BootstrapResult, error) {
	if err := s.Validate(); err != nil {
		return nil, fmt.Errorf("bus protocol settings: %w", err)
	}
	var out []BootstrapResult
	for _, cfg := range append(ProtocolBuckets(s), ObjectBucketsWith(s)...) {
		var r BootstrapResult
		if err := RetryTransient(ctx, func(ctx context.Context) (err error) {
			r, err = EnsureBucket(ctx, js, cfg, true)
			return err
		}); err != nil {
			return out, err
		}
		out = append(out, r)
	}
	var r BootstrapResult
	err := RetryTransient(ctx, func(ctx context.Context) (err error) {
		r, err = EnsureStream(ctx, js, EventsStreamConfig(s), true)
		return err
	})
	if err == nil {
		out = append(out, r)
	}
	return out, err
}

func EnsureBucket(ctx context.Context, js jetstream.JetStream, cfg jetstream.KeyValueConfig, enforce bool) (BootstrapResult, error) {
	res := placed(cfg.Bucket, "", cfg.Replicas, cfg.Placement)
	kv, err := js.KeyValue(ctx, cfg.Bucket)
	switch {
	case errors.Is(err, jetstream.ErrBucketNotFound):
		raced, err := createMissing("bucket", cfg.Bucket, cfg.Replicas, func() error {
			_, err := js.CreateKeyValue(ctx, cfg)
			return err
		})
		if raced {
			return EnsureBucket(ctx, js, cfg, enforce)
		}
		if err != nil {
			return res, err
		}
		klog.InfoS("Created bus bucket", "bucket", cfg.Bucket, "history", cfg.History, "replicas", cfg.Replicas, "placement", cfg.Placement)
		res.Action = "created"
		return res, nil
	case err != nil:
		return res, fmt.Errorf("look up bucket %q: %w", cfg.Bucket, err)
	}
	status, err := kv.Status(ctx)
	if err != nil {
		return res, fmt.Errorf("read bucket %q status: %w", cfg.Bucket, err)
	}
	have := status.Config()
	res = placed(cfg.Bucket, "unchanged", have.Replicas, have.Placement)
	// An agent accepts what exists (it needs no right to edit streams and
	// never lowers what an operator raised); the description is
	// informative, so a bucket made by hand without one is fine too.
	// Bootstrap, the operator's, brings everything to the protocol.
	same := have.History == cfg.History && have.Storage == cfg.Storage &&
		max(have.Replicas, 1) == cfg.Replicas && SamePlacement(have.Placement, cfg.Placement) &&
		(!enforce || (have.Description == cfg.Description && SameSources(have.Sources, cfg.Sources)))
	if same {
		return res, nil
	}
	if !enforce {
		klog.V(2).InfoS("Bus bucket settings differ from this agent's; keeping the operator's",
			"bucket", cfg.Bucket, "history", have.History, "replicas", have.Replicas, "wantReplicas", cfg.Replicas)
		if have.Replicas < cfg.Replicas {
			klog.InfoS("Bus bucket has fewer replicas than this agent asks for; raise them with actorletctl bootstrap",
				"bucket", cfg.Bucket, "replicas", have.Replicas, "wantReplicas", cfg.Replicas)
		}
		return res, nil
	}
	if _, err := js.UpdateKeyValue(ctx, cfg); err != nil {
		return res, fmt.Errorf("update bucket %q (replicas %d → %d): %w", cfg.Bucket, have.Replicas, cfg.Replicas, err)
	}
	klog.InfoS("Updated bus bucket", "bucket", cfg.Bucket, "history", cfg.History, "replicas", cfg.Replicas, "placement", cfg.Placement)
	return placed(cfg.Bucket, "updated", cfg.Replicas, cfg.Placement), nil
}

func EnsureStream(ctx context.Context, js jetstream.JetStream, cfg jetstream.StreamConfig, enforce bool) (BootstrapResult, error) {
	res := placed(cfg.Name, "", cfg.Replicas, cfg.Placement)
	stream, err := js.Stream(ctx, cfg.Name)
	switch {
	case errors.Is(err, jetstream.ErrStreamNotFound):
		raced, err := createMissing("stream", cfg.Name, cfg.Replicas, func() error {
			_, err := js.CreateStream(ctx, cfg)
			return err
		})
		if raced {
			return EnsureStream(ctx, js, cfg, enforce)
		}
		if err != nil {
			return res, err
		}
		klog.InfoS("Created bus stream", "stream", cfg.Name, "subjects", cfg.Subjects, "replicas", cfg.Replicas, "placement", cfg.Placement)
		res.Action = "created"
		return res, nil
	case err != nil:
		return res, fmt.Errorf("look up stream %q: %w", cfg.Name, err)
	}
	have := stream.CachedInfo().Config
	res = placed(cfg.Name, "unchanged", have.Replicas, have.Placement)
	captures := slices.Contains(have.Subjects, EventsSubjects)
	if !enforce {
		if captures {
			if max(have.Replicas, 1) < cfg.Replicas {
				klog.InfoS("Bus stream has fewer replicas than this agent asks for; raise them with actorletctl bootstrap",
					"stream", cfg.Name, "replicas", have.Replicas, "wantReplicas", cfg.Replicas)
			}
			return res, nil
		}
		// Repair only what breaks the protocol; keep everything else.
		repaired := have
		repaired.Subjects = append(slices.Clone(have.Subjects), EventsSubjects)
		if _, err := js.UpdateStream(ctx, repaired); err != nil {
			return res, fmt.Errorf("stream %q does not capture %s and cannot be repaired: %w", cfg.Name, EventsSubjects, err)
		}
		klog.InfoS("Repaired bus stream subjects", "stream", cfg.Name, "subjects", repaired.Subjects)
		res.Action = "updated"
		return res, nil
	}
	if slices.Equal(have.Subjects, cfg.Subjects) && have.Retention == cfg.Retention && have.Discard == cfg.Discard &&
		have.MaxAge == cfg.MaxAge && have.Storage == cfg.Storage && have.Description == cfg.Description &&
		max(have.Replicas, 1) == cfg.Replicas && SamePlacement(have.Placement, cfg.Placement) &&
		SameSources(have.Sources, cfg.Sources) {
		return res, nil
	}
	if _, err := js.UpdateStream(ctx, cfg); err != nil {
		return res, fmt.Errorf("update stream %q (replicas %d → %d): %w", cfg.Name, have.Replicas, cfg.Replicas, err)
	}
	klog.InfoS("Updated bus stream", "stream", cfg.Name, "subjects", cfg.Subjects, "replicas", cfg.Replicas, "placement", cfg.Placement)
	return placed(cfg.Name, "updated", cfg.Replicas, cfg.Placement), nil
}

// createMissing creates a bucket or stream (kind) the lookup did not find.
// raced says another creator (an agent, perhaps with other settings) got
// there first: it is the operator's now, and the caller looks at it again.
func createMissing(kind, name string, replicas int, create func() error) (raced bool, err error) {
	err = create()
	if errors.Is(err, jetstream.ErrBucketExists) || errors.Is(err, jetstream.ErrStreamNameAlreadyInUse) {
		return true, nil
	}
	if err != nil {
		return false, fmt.Errorf("create %s %q (replicas %d; with node credentials, an operator creates it: actorletctl bootstrap): %w", kind, name, replicas, err)
	}
	return false, nil
}

// placed is what Bootstrap reports of one bucket or stream: its name, the
// action taken, and its replicas (at least 1) and placement.
func placed(name, action string, replicas int, p *jetstream.Placement) BootstrapResult {
	r := BootstrapResult{Name: name, Action: action, Replicas: max(replicas, 1)}
	if p != nil {
		r.Cluster, r.Tags = p.Cluster, p.Tags
	}
	return r
}

func SamePlacement(a, b *jetstream.Placement) bool {
	empty := func(p *jetstream.Placement) bool { return p == nil || (p.Cluster == "" && len(p.Tags) == 0) }
	if empty(a) || empty(b) {
		return empty(a) == empty(b)
	}
	return a.Cluster == b.Cluster && slices.Equal(a.Tags, b.Tags)
}

// Retry of transient JetStream errors (leader elections, a server of the
// cluster restarting): the delay doubles up to transientMax.
const (
	transientBase = 100 * time.Millisecond
	transientMax  = 2 * time.Second
)

// transientAttempt bounds one attempt: a request sent while the cluster has
// no meta leader gets no answer at all, and must not use up the caller's
// whole deadline.
const transientAttempt = 5 * time.Second

// RetryTransient runs f until it succeeds, fails with an error that is not
// transient, or ctx ends (the last error is returned, with ctx's). Each
// attempt gets at most transientAttempt.
func RetryTransient(ctx context.Context, f func(context.Context) error) error {
	delay := transientBase
	for {
		actx, cancel := context.WithTimeout(ctx, transientAttempt)
		err := f(actx)
		cancel()
		if err == nil || !IsTransient(err) {
			return err
		}
		klog.V(2).InfoS("JetStream not available yet, retrying", "err", err, "retryIn", delay)
		select {
		case <-ctx.Done():
			return fmt.Errorf("%w (gave up: %v)", err, ctx.Err())
		case <-time.After(delay):
		}
		delay = min(delay*2, transientMax)
	}
}

// JetStream API error codes (nats-server's errors.json) that name a
// passing state of a cluster.
const (
	jsErrTemporarilyUnavailable jetstream.ErrorCode = 10008 // "JetStream system temporarily unavailable"
	jsErrInsufficientResources  jetstream.ErrorCode = 10023 // fewer servers up than replicas
	jsErrLastSeqUnavailable     jetstream.ErrorCode = 10163 // "expected last sequence per subject temporarily unavailable"
)

// IsTransient reports whether err is one JetStream returns while a cluster
// elects a leader or a server is down, so the same request may succeed
// later: no responders, a timeout, "JetStream system temporarily
// unavailable" (10008), "insufficient resources" while servers are missing,
// or a lost connection.
func IsTransient(err error) bool {
	if err == nil {
		return false
	}
	if errors.Is(err, context.Canceled) {
		return false
	}
	if errors.Is(err, nats.ErrNoResponders) || errors.Is(err, jetstream.ErrNoStreamResponse) ||
		errors.Is(err, nats.ErrTimeout) || errors.Is(err, context.DeadlineExceeded) ||
		errors.Is(err, nats.ErrConnectionReconnecting) || errors.Is(err, nats.ErrDisconnected) ||
		errors.Is(err, jetstream.ErrJetStreamNotEnabled) {
		return true
	}
	var apiErr *jetstream.APIError
	if errors.As(err, &apiErr) {
		switch apiErr.ErrorCode {
		case jsErrTemporarilyUnavailable, jsErrInsufficientResources, jetstream.JSErrCodeJetStreamNotEnabled, jsErrLastSeqUnavailable:
			return true
		}
	}
	return false
}

// EdgeDomain is the JetStream domain of node's embedded leaf server.
func EdgeDomain(node string) string { return edgeDomainPrefix + EncodeName(node) }

// hubEdgeSources are the sources, one per edge node, of a hub bucket (or
// the events stream) named stream whose keys start with the node's token.
func hubEdgeSources(stream, subjectPrefix string, nodes []string) []*jetstream.StreamSource {
	var out []*jetstream.StreamSource
	for _, n := range nodes {
		subj := subjectPrefix + "." + EncodeName(n)
		tr := []jetstream.SubjectTransformConfig{{Source: subj + ".>", Destination: subj + ".>"}}
		if stream == "KV_"+NodesBucket {
			tr = []jetstream.SubjectTransformConfig{{Source: subj, Destination: subj}}
		}
		out = append(out, &jetstream.StreamSource{Name: stream, Domain: EdgeDomain(n), SubjectTransforms: tr})
	}
	return out
}

// sameSources compares configured sources with those a server reports
// (which carry External instead of Domain).
func SameSources(have, want []*jetstream.StreamSource) bool {
	if len(have) != len(want) {
		return false
	}
	key := func(s *jetstream.StreamSource) string {
		prefix := ""
		if s.Domain != "" {
			prefix = "$JS." + s.Domain + ".API"
		} else if s.External != nil {
			prefix = s.External.APIPrefix
		}
		var tr []string
		for _, t := range s.SubjectTransforms {
			tr = append(tr, t.Source+">"+t.Destination)
		}
		return s.Name + "|" + prefix + "|" + s.FilterSubject + "|" + strings.Join(tr, ",")
	}
	hk := make([]string, len(have))
	wk := make([]string, len(want))
	for i := range have {
		hk[i], wk[i] = key(have[i]), key(want[i])
	}
	slices.Sort(hk)
	slices.Sort(wk)
	return slices.Equal(hk, wk)
}
