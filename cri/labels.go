package cri

// Labels the runtime manager (cri/kuberuntime) puts on every sandbox and
// container, read back by whoever ties a runtime object to its pod: the
// PLEG's event handler and the containerd event adapter.
const (
	LabelPodName      = "io.kubernetes.pod.name"
	LabelPodNamespace = "io.kubernetes.pod.namespace"
	LabelPodUID       = "io.kubernetes.pod.uid"
	// LabelNode names the node (agent) that created a sandbox or container.
	// Several agents may share one runtime (a benchmark beside a test run,
	// two nodes on one host): each lists, adopts and kills as orphans only
	// the pods carrying its own node name.
	LabelNode = "io.actorlet.node"
)
