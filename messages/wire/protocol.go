package wire

import (
	"fmt"
	"strings"
)

// JetStream buckets and streams.
const (
	// DesiredBucket is the KV bucket of desired pods, written by operators,
	// watched by nodes. Keys: DesiredNodeKey / DesiredFleetKey. Values: Pod
	// JSON. Deleting (or purging) a key removes the pod at once; writing the
	// pod with metadata.deletionTimestamp asks for graceful deletion, after
	// which the node deletes the key itself.
	DesiredBucket = "actorlet_desired"
	// StatusBucket holds the latest status of every pod per node. Key:
	// StatusKey. Value: Pod JSON with .status set.
	StatusBucket = "actorlet_status"
	// NodesBucket holds each node's registration and heartbeat. Key: the
	// encoded node name. Value: v1.Node JSON.
	NodesBucket = "actorlet_nodes"
	// EventsStream keeps events (v1.Event JSON) per node for a while, on
	// subjects EventSubject.
	EventsStream = "ACTORLET_EVENTS"
)

// Subject prefixes.
const (
	// StatusSubjectPrefix: every pod status change is also published on
	// actorlet.status.<node>.<namespace>.<name> for watchers.
	StatusSubjectPrefix = "actorlet.status"
	// EventSubjectPrefix: actorlet.events.<node>.<namespace>.<name>.
	EventSubjectPrefix = "actorlet.events"
	// CommandSubjectPrefix: operator request/reply endpoints of a node live
	// at actorlet.node.<node>.<verb>.
	CommandSubjectPrefix = "actorlet.node"
	// CommandServiceName is the nats micro service name every node registers.
	CommandServiceName = "actorlet-node"
)

// EncodeName makes a Kubernetes name usable as one NATS token.
func EncodeName(name string) string { return strings.ReplaceAll(name, ".", "_") }

// DecodeName reverses EncodeName.
func DecodeName(token string) string { return strings.ReplaceAll(token, "_", ".") }

// DesiredNodeKey is the key of a pod meant for one node.
func DesiredNodeKey(node, namespace, name string) string {
	return fmt.Sprintf("node.%s.%s.%s", EncodeName(node), EncodeName(namespace), EncodeName(name))
}

// DesiredFleetKey is the key of a fleet-wide pod: every node whose labels
// match the pod's nodeSelector runs it.
func DesiredFleetKey(namespace, name string) string {
	return fmt.Sprintf("fleet.%s.%s", EncodeName(namespace), EncodeName(name))
}

// DesiredNodeWatch is the key filter a node watches for its own pods.
func DesiredNodeWatch(node string) string { return "node." + EncodeName(node) + ".>" }

// DesiredFleetWatch is the key filter for fleet-wide pods.
const DesiredFleetWatch = "fleet.>"

// StatusKey is the StatusBucket key of a pod on a node.
func StatusKey(node, namespace, name string) string {
	return fmt.Sprintf("%s.%s.%s", EncodeName(node), EncodeName(namespace), EncodeName(name))
}

// StatusSubject is where a pod's status changes are published.
func StatusSubject(node, namespace, name string) string {
	return StatusSubjectPrefix + "." + StatusKey(node, namespace, name)
}

// EventSubject is where events about a pod (or the node, with empty
// namespace and name encoded as "_node") are published.
func EventSubject(node, namespace, name string) string {
	if namespace == "" && name == "" {
		return fmt.Sprintf("%s.%s._node._node", EventSubjectPrefix, EncodeName(node))
	}
	return fmt.Sprintf("%s.%s.%s.%s", EventSubjectPrefix, EncodeName(node), EncodeName(namespace), EncodeName(name))
}

// CommandSubject is the subject of a node's command endpoint.
func CommandSubject(node, verb string) string {
	return CommandSubjectPrefix + "." + EncodeName(node) + "." + verb
}

// NamespacedToken marks a pod command addressed by namespace:
// actorlet.node.<node>.ns.<namespace>.<verb> (NamespacedCommandSubject).
const NamespacedToken = "ns"

// NamespacedCommandSubject is the subject of a pod verb (PodVerbs) for a
// pod of namespace: the namespace is a subject token, so a bus permission
// can limit an operator to one namespace's pods, and the node serves it
// only for requests about a pod of that namespace. An empty namespace is
// "default". Nodes serve every pod verb on CommandSubject too (operators
// with every namespace).
func NamespacedCommandSubject(node, namespace, verb string) string {
	if namespace == "" {
		namespace = "default"
	}
	return CommandSubjectPrefix + "." + EncodeName(node) + "." + NamespacedToken + "." + EncodeName(namespace) + "." + verb
}
