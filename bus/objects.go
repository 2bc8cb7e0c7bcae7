package bus

import (
	"github.com/actorlet/actorlet/messages/wire"
)

// ObjectsHistory is the history kept of each ConfigMap and Secret.
const ObjectsHistory = wire.ObjectsHistory

// ObjectBuckets returns the KV bucket configurations of ConfigMaps and
// Secrets (wire.ObjectBuckets).
var ObjectBuckets = wire.ObjectBuckets
