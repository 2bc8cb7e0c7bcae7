package bus

import (
	"context"
	"errors"
	"fmt"
	"reflect"
	"time"

	"github.com/nats-io/nats.go/jetstream"
	"k8s.io/klog/v2"

	"github.com/actorlet/actorlet/messages/wire"
)

// Settings of the protocol's buckets and stream. Replicas start at 1; a
// cluster operator may raise them (nats kv edit / nats stream edit) and
// EnsureProtocol keeps whatever replica count it finds.
const (
	DesiredHistory = 5
	StatusHistory  = 1
	NodesHistory   = 1
	EventsMaxAge   = time.Hour
)

// EventsSubjects is the subject filter of EventsStream.
const EventsSubjects = wire.EventSubjectPrefix + ".>"

// ProtocolBuckets returns the KV bucket configurations of the protocol.
func ProtocolBuckets() []jetstream.KeyValueConfig {
	return []jetstream.KeyValueConfig{
		{Bucket: wire.DesiredBucket, Description: "actorlet desired pods (operators write, nodes watch)", History: DesiredHistory, Storage: jetstream.FileStorage, Replicas: 1},
		{Bucket: wire.StatusBucket, Description: "actorlet pod status per node", History: StatusHistory, Storage: jetstream.FileStorage, Replicas: 1},
		{Bucket: wire.NodesBucket, Description: "actorlet node registration and heartbeat", History: NodesHistory, Storage: jetstream.FileStorage, Replicas: 1},
	}
}

// EventsStreamConfig is the configuration of EventsStream.
func EventsStreamConfig() jetstream.StreamConfig {
	return jetstream.StreamConfig{
		Name:        wire.EventsStream,
		Description: "actorlet events (v1.Event JSON) per node and pod",
		Subjects:    []string{EventsSubjects},
		Retention:   jetstream.LimitsPolicy,
		Discard:     jetstream.DiscardOld,
		MaxAge:      EventsMaxAge,
		Storage:     jetstream.FileStorage,
		Replicas:    1,
	}
}

// EnsureProtocol creates the protocol's buckets and stream, or brings
// existing ones to the protocol's settings. Running it again changes
// nothing; the replica count found on the server is kept.
func (c *Conn) EnsureProtocol(ctx context.Context) error {
	for _, cfg := range ProtocolBuckets() {
		if err := c.ensureBucket(ctx, cfg); err != nil {
			return err
		}
	}
	return c.ensureStream(ctx, EventsStreamConfig())
}

func (c *Conn) ensureBucket(ctx context.Context, cfg jetstream.KeyValueConfig) error {
	kv, err := c.JS.KeyValue(ctx, cfg.Bucket)
	switch {
	case errors.Is(err, jetstream.ErrBucketNotFound):
		if _, err := c.JS.CreateKeyValue(ctx, cfg); err != nil && !errors.Is(err, jetstream.ErrBucketExists) {
			return fmt.Errorf("create bucket %q (with node credentials, an operator creates it: actorletctl node add): %w", cfg.Bucket, err)
		}
		klog.InfoS("Created bus bucket", "bucket", cfg.Bucket, "history", cfg.History)
		return nil
	case err != nil:
		return fmt.Errorf("look up bucket %q: %w", cfg.Bucket, err)
	}
	status, err := kv.Status(ctx)
	if err != nil {
		return fmt.Errorf("read bucket %q status: %w", cfg.Bucket, err)
	}
	have := status.Config()
	cfg.Replicas = max(have.Replicas, 1)
	// The description is informative: a bucket made by hand without one
	// satisfies the agent, which then needs no right to update it.
	if have.History == cfg.History && have.Storage == cfg.Storage {
		return nil
	}
	if _, err := c.JS.UpdateKeyValue(ctx, cfg); err != nil {
		return fmt.Errorf("update bucket %q: %w", cfg.Bucket, err)
	}
	klog.InfoS("Updated bus bucket", "bucket", cfg.Bucket, "history", cfg.History)
	return nil
}

func (c *Conn) ensureStream(ctx context.Context, cfg jetstream.StreamConfig) error {
	stream, err := c.JS.Stream(ctx, cfg.Name)
	switch {
	case errors.Is(err, jetstream.ErrStreamNotFound):
		if _, err := c.JS.CreateStream(ctx, cfg); err != nil && !errors.Is(err, jetstream.ErrStreamNameAlreadyInUse) {
			return fmt.Errorf("create stream %q (with node credentials, an operator creates it: actorletctl node add): %w", cfg.Name, err)
		}
		klog.InfoS("Created bus stream", "stream", cfg.Name, "subjects", cfg.Subjects)
		return nil
	case err != nil:
		return fmt.Errorf("look up stream %q: %w", cfg.Name, err)
	}
	have := stream.CachedInfo().Config
	cfg.Replicas = max(have.Replicas, 1)
	if reflect.DeepEqual(have.Subjects, cfg.Subjects) && have.Retention == cfg.Retention && have.Discard == cfg.Discard &&
		have.MaxAge == cfg.MaxAge && have.Storage == cfg.Storage {
		return nil
	}
	if _, err := c.JS.UpdateStream(ctx, cfg); err != nil {
		return fmt.Errorf("update stream %q: %w", cfg.Name, err)
	}
	klog.InfoS("Updated bus stream", "stream", cfg.Name, "subjects", cfg.Subjects)
	return nil
}
