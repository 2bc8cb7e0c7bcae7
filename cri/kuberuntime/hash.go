package kuberuntime

import (
	"encoding/json"
	"hash/fnv"

	v1 "k8s.io/api/core/v1"
)

// restartFields are the container spec fields whose change requires a new
// container instance. Probes, lifecycle hooks and the pull policy can change
// without a restart.
type restartFields struct {
	Name                   string                     `json:"name"`
	Image                  string                     `json:"image"`
	Command                []string                   `json:"command,omitempty"`
	Args                   []string                   `json:"args,omitempty"`
	WorkingDir             string                     `json:"workingDir,omitempty"`
	Ports                  []v1.ContainerPort         `json:"ports,omitempty"`
	EnvFrom                []v1.EnvFromSource         `json:"envFrom,omitempty"`
	Env                    []v1.EnvVar                `json:"env,omitempty"`
	Resources              v1.ResourceRequirements    `json:"resources"`
	VolumeMounts           []v1.VolumeMount           `json:"volumeMounts,omitempty"`
	SecurityContext        *v1.SecurityContext        `json:"securityContext,omitempty"`
	TerminationMessagePath string                     `json:"terminationMessagePath,omitempty"`
	Stdin                  bool                       `json:"stdin,omitempty"`
	TTY                    bool                       `json:"tty,omitempty"`
	RestartPolicy          *v1.ContainerRestartPolicy `json:"restartPolicy,omitempty"`
}

// hashContainer is a stable hash of the fields of c that require a restart.
// JSON encoding is deterministic (struct order, sorted map keys), so equal
// specs hash equal across processes.
func hashContainer(c *v1.Container) uint64 {
	f := restartFields{
		Name: c.Name, Image: c.Image, Command: c.Command, Args: c.Args,
		WorkingDir: c.WorkingDir, Ports: c.Ports, EnvFrom: c.EnvFrom, Env: c.Env,
		Resources: c.Resources, VolumeMounts: c.VolumeMounts,
		SecurityContext: c.SecurityContext, TerminationMessagePath: c.TerminationMessagePath,
		Stdin: c.Stdin, TTY: c.TTY, RestartPolicy: c.RestartPolicy,
	}
	b, err := json.Marshal(f)
	if err != nil {
		// Only unencodable values (NaN) fail; spec types hold none.
		panic("hash container spec: " + err.Error())
	}
	h := fnv.New64a()
	_, _ = h.Write(b)
	return h.Sum64()
}
