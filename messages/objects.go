package messages

import "fmt"

// ObjectChanged tells the supervisor that a ConfigMap or Secret a pod may
// use changed or went away on the bus: pods of that namespace that
// reference it are synced, so their volumes are updated (env is read only
// when a container starts, as in the kubelet).
type ObjectChanged struct {
	Kind      string // "ConfigMap" or "Secret"
	Namespace string
	Name      string
}

func (o ObjectChanged) String() string {
	return fmt.Sprintf("ObjectChanged{%s %s/%s}", o.Kind, o.Namespace, o.Name)
}
