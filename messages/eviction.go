package messages

import v1 "k8s.io/api/core/v1"

// NodePressureChanged is sent by the eviction actor to the supervisor when
// the node's pressure conditions change (MemoryPressure, DiskPressure,
// PIDPressure, sorted): admission refuses pods under them and the node
// heartbeat reports them. An empty list means no pressure.
type NodePressureChanged struct {
	Conditions []v1.NodeConditionType
}
