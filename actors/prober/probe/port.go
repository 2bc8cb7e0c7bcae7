package probe

import (
	"fmt"

	v1 "k8s.io/api/core/v1"
	"k8s.io/apimachinery/pkg/util/intstr"
)

// ResolvePort turns a probe's port, a number or the name of one of the
// container's ports, into a port number.
func ResolvePort(port intstr.IntOrString, container *v1.Container) (int, error) {
	var n int
	switch port.Type {
	case intstr.Int:
		n = port.IntValue()
	case intstr.String:
		if port.StrVal == "" {
			return 0, fmt.Errorf("port: empty port name")
		}
		found := false
		if container != nil {
			for _, p := range container.Ports {
				if p.Name == port.StrVal && (p.Protocol == "" || p.Protocol == v1.ProtocolTCP) {
					n, found = int(p.ContainerPort), true
					break
				}
			}
		}
		if !found {
			return 0, fmt.Errorf("port: no TCP container port named %q", port.StrVal)
		}
	default:
		return 0, fmt.Errorf("port: unknown port type %d", port.Type)
	}
	if n < 1 || n > 65535 {
		return 0, fmt.Errorf("port: %d is out of range 1-65535", n)
	}
	return n, nil
}
