package wire

import (
	"context"
	"errors"
	"fmt"
	"slices"
	"strings"

	"github.com/nats-io/nats.go/jetstream"
)

// ConfigMaps and Secrets live in two KV buckets, one per kind, so a NATS
// permission can give a node its ConfigMaps and Secrets separately. Keys
// have the same two scopes as desired pods:
//
//	node.<node>.<namespace>.<name>   only that node reads it
//	fleet.<namespace>.<name>         every node may read it
//
// A pod on node N that references namespace/name gets the node-scoped
// object when one exists, else the fleet one. Values: v1.ConfigMap or
// v1.Secret JSON. A node's read permission for its objects is then
// exactly (see docs/protocol.md, "Permissions"):
//
//	$KV.actorlet_configmaps.node.<node>.>  $KV.actorlet_configmaps.fleet.>
//	$KV.actorlet_secrets.node.<node>.>     $KV.actorlet_secrets.fleet.>
const (
	ConfigMapsBucket = "actorlet_configmaps"
	SecretsBucket    = "actorlet_secrets"
	// MaxObjectDataSize is the API server's limit on the data of one
	// ConfigMap or Secret (1 MiB).
	MaxObjectDataSize = 1 << 20
	// MaxObjectValueSize bounds one encoded object in a bucket: the data
	// (base64 in a Secret's JSON) plus metadata. Larger values are refused
	// by the bucket and by the agent.
	MaxObjectValueSize = 1<<20*4/3 + 64<<10
)

// ObjectBucket is the bucket of kind ("ConfigMap" or "Secret").
func ObjectBucket(kind string) (string, error) {
	switch kind {
	case "ConfigMap":
		return ConfigMapsBucket, nil
	case "Secret":
		return SecretsBucket, nil
	}
	return "", fmt.Errorf("kind %q: want ConfigMap or Secret", kind)
}

// ObjectNodeKey is the key of an object only node may read.
func ObjectNodeKey(node, namespace, name string) string { return DesiredNodeKey(node, namespace, name) }

// ObjectFleetKey is the key of an object every node may read.
func ObjectFleetKey(namespace, name string) string { return DesiredFleetKey(namespace, name) }

// ObjectNodeWatch is the key filter of the objects only node may read.
func ObjectNodeWatch(node string) string { return DesiredNodeWatch(node) }

// ObjectFleetWatch is the key filter of fleet-wide objects.
const ObjectFleetWatch = DesiredFleetWatch

// ObjectSubjects are the KV subjects node may read in bucket: for NATS
// permissions.
func ObjectSubjects(bucket, node string) []string {
	return []string{
		"$KV." + bucket + "." + ObjectNodeWatch(node),
		"$KV." + bucket + "." + ObjectFleetWatch,
	}
}

// ParseObjectKey reads an object key (the DesiredKey forms).
func ParseObjectKey(key string) (DesiredKey, error) {
	k, err := ParseDesiredKey(key)
	if err != nil {
		return k, fmt.Errorf("object key: %s", strings.TrimPrefix(err.Error(), "desired key "))
	}
	return k, nil
}

// ObjectsHistory is the history kept of each ConfigMap and Secret.
const ObjectsHistory = 1

// ObjectBuckets returns the KV bucket configurations of ConfigMaps and
// Secrets (ConfigMapsBucket, SecretsBucket) with one replica.
func ObjectBuckets() []jetstream.KeyValueConfig { return ObjectBucketsWith(ProtocolSettings{}) }

// ObjectBucketsWith returns the object buckets' configurations with s's
// replicas and placement (Bootstrap makes them like the other buckets).
func ObjectBucketsWith(s ProtocolSettings) []jetstream.KeyValueConfig {
	r, p := s.replicas(), s.placement()
	return []jetstream.KeyValueConfig{
		{Bucket: ConfigMapsBucket, Description: "actorlet ConfigMaps (operators write, nodes read their scope)", History: ObjectsHistory,
			Storage: jetstream.FileStorage, Replicas: r, Placement: p, MaxValueSize: MaxObjectValueSize},
		{Bucket: SecretsBucket, Description: "actorlet Secrets (operators write, nodes read their scope)", History: ObjectsHistory,
			Storage: jetstream.FileStorage, Replicas: r, Placement: p, MaxValueSize: MaxObjectValueSize},
	}
}

// EnsureObjectBuckets creates the object buckets that are missing and
// leaves existing ones as they are (EnsureBucket without enforcing). A
// missing one is created with the replicas and placement of the desired
// bucket (those Bootstrap chose; one replica when there is none yet), so
// `actorletctl node add` never makes a bucket less replicated than the
// rest of the fleet's.
func EnsureObjectBuckets(ctx context.Context, js jetstream.JetStream) error {
	var s ProtocolSettings
	if err := RetryTransient(ctx, func(ctx context.Context) (err error) {
		s, err = ExistingSettings(ctx, js)
		return err
	}); err != nil {
		return err
	}
	for _, cfg := range ObjectBucketsWith(s) {
		if err := RetryTransient(ctx, func(ctx context.Context) error {
			_, err := EnsureBucket(ctx, js, cfg, false)
			return err
		}); err != nil {
			return err
		}
	}
	return nil
}

// ExistingSettings reads the replicas and placement of the desired bucket:
// what Bootstrap (or the first agent) chose for the fleet. Without the
// bucket it returns the defaults (one replica).
func ExistingSettings(ctx context.Context, js jetstream.JetStream) (ProtocolSettings, error) {
	stream, err := js.Stream(ctx, BucketStream(DesiredBucket))
	if errors.Is(err, jetstream.ErrStreamNotFound) {
		return ProtocolSettings{}, nil
	}
	if err != nil {
		return ProtocolSettings{}, fmt.Errorf("read the settings of bucket %q: %w", DesiredBucket, err)
	}
	cfg := stream.CachedInfo().Config
	s := ProtocolSettings{Replicas: max(cfg.Replicas, 1)}
	if p := cfg.Placement; p != nil {
		s.Cluster, s.Tags = p.Cluster, slices.Clone(p.Tags)
	}
	return s, nil
}
