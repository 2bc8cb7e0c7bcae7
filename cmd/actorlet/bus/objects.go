package bus

import (
	"github.com/nats-io/nats.go/jetstream"

	"github.com/actorlet/actorlet/messages/wire"
)

// ObjectsHistory is the history kept of each ConfigMap and Secret.
const ObjectsHistory = 1

// ObjectBuckets returns the KV bucket configurations of ConfigMaps and
// Secrets (wire.ConfigMapsBucket, wire.SecretsBucket).
func ObjectBuckets() []jetstream.KeyValueConfig {
	return []jetstream.KeyValueConfig{
		{Bucket: wire.ConfigMapsBucket, Description: "actorlet ConfigMaps (operators write, nodes read their scope)", History: ObjectsHistory,
			Storage: jetstream.FileStorage, Replicas: 1, MaxValueSize: wire.MaxObjectValueSize},
		{Bucket: wire.SecretsBucket, Description: "actorlet Secrets (operators write, nodes read their scope)", History: ObjectsHistory,
			Storage: jetstream.FileStorage, Replicas: 1, MaxValueSize: wire.MaxObjectValueSize},
	}
}
