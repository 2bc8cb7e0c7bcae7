package validation

import (
	"fmt"
	"os"
	"path/filepath"
	"strings"

	v1 "k8s.io/api/core/v1"
	"k8s.io/apimachinery/pkg/util/validation/field"
)

// ProcessRuntimeName is the CRI runtime name of the embedded process
// runtime (cri/procruntime.RuntimeName): a node record whose
// nodeInfo.containerRuntimeVersion starts with it + "://" runs host
// processes, with no images.
const ProcessRuntimeName = "actorlet-process"

// IsProcessRuntime says whether a node's containerRuntimeVersion
// ("actorlet-process://0.1.0") is the process runtime.
func IsProcessRuntime(runtimeVersion string) bool {
	return strings.HasPrefix(runtimeVersion, ProcessRuntimeName+"://")
}

// ReasonRuntimeUnsupported is the reason of a pod refused at admission,
// or of an ephemeral container left waiting, because the node's runtime
// cannot run it (ProcessRuntimeErrors).
const ReasonRuntimeUnsupported = "RuntimeUnsupported"

// DefaultPath is the PATH a container gets when neither it nor the node
// sets one (as the process runtime does).
const DefaultPath = "/usr/local/sbin:/usr/local/bin:/usr/sbin:/usr/bin:/sbin:/bin"

// maxPathDirs bounds the $PATH entries searched for one program.
const maxPathDirs = 64

// noEntrypoint is what to do about a container the process runtime cannot
// start for want of an image entrypoint.
const noEntrypoint = "the node's process runtime has no image entrypoint, so a container runs its command: " +
	"give one (for example command: [\"sh\", \"-c\", \"...\"]), or run the node against containerd (--container-runtime-endpoint)"

// ProcessRuntimeErrors lists what the process runtime cannot run in pod,
// each on its field: a container (init, regular or ephemeral) without
// command or args, since there is no image entrypoint to run; and, when
// lookPath is not nil, an args-only container whose args[0] — the program
// the runtime would run — does not resolve on the node. lookPath(name,
// path) returns nil when name is an executable found in the $PATH path.
// An absolute args[0] under one of the container's volume mounts is not
// looked up: an init container may put it there.
func ProcessRuntimeErrors(spec *v1.PodSpec, lookPath func(name, path string) error) field.ErrorList {
	var errs field.ErrorList
	spath := field.NewPath("spec")
	for i := range spec.InitContainers {
		errs = append(errs, ProcessRuntimeContainerErrors(&spec.InitContainers[i], spath.Child("initContainers").Index(i), lookPath)...)
	}
	for i := range spec.Containers {
		errs = append(errs, ProcessRuntimeContainerErrors(&spec.Containers[i], spath.Child("containers").Index(i), lookPath)...)
	}
	for i := range spec.EphemeralContainers {
		c := v1.Container(spec.EphemeralContainers[i].EphemeralContainerCommon)
		errs = append(errs, ProcessRuntimeContainerErrors(&c, spath.Child("ephemeralContainers").Index(i), lookPath)...)
	}
	return errs
}

// ProcessRuntimeContainerErrors is ProcessRuntimeErrors for one container
// at path.
func ProcessRuntimeContainerErrors(c *v1.Container, path *field.Path, lookPath func(name, path string) error) field.ErrorList {
	switch {
	case len(c.Command) > 0:
		return nil
	case len(c.Args) == 0:
		return field.ErrorList{field.Required(path.Child("command"), noEntrypoint)}
	case lookPath == nil || underMount(c.Args[0], c.VolumeMounts):
		return nil
	}
	search, known := containerPath(c.Env)
	if !known {
		return nil
	}
	if err := lookPath(c.Args[0], search); err != nil {
		return field.ErrorList{field.Required(path.Child("command"), fmt.Sprintf(
			"with no command the process runtime runs args[0] %q as the program, and %v; %s", c.Args[0], err, noEntrypoint))}
	}
	return nil
}

// containerPath is the $PATH a container's program is looked up in: its
// own PATH variable, else the node's. known is false when the container
// computes it ($(VAR) references or valueFrom): then nothing is checked.
func containerPath(env []v1.EnvVar) (path string, known bool) {
	for i := len(env) - 1; i >= 0; i-- {
		if env[i].Name != "PATH" {
			continue
		}
		if env[i].ValueFrom != nil || strings.Contains(env[i].Value, "$(") {
			return "", false
		}
		return env[i].Value, true
	}
	if p := os.Getenv("PATH"); p != "" {
		return p, true
	}
	return DefaultPath, true
}

func underMount(name string, mounts []v1.VolumeMount) bool {
	if !filepath.IsAbs(name) {
		return false
	}
	for _, m := range mounts {
		if dir := filepath.Clean(m.MountPath); name == dir || strings.HasPrefix(name, strings.TrimSuffix(dir, "/")+"/") {
			return true
		}
	}
	return false
}

// LookPath resolves name as the process runtime does: a name with a slash
// is used as is (it must be an executable file; a relative one is not
// checked, it depends on the working directory), any other is searched in
// the absolute directories of path (at most 64).
func LookPath(name, path string) error {
	if strings.Contains(name, "/") {
		if !filepath.IsAbs(name) {
			return nil
		}
		if !isExecutable(name) {
			return fmt.Errorf("%s is not an executable file on the node", name)
		}
		return nil
	}
	dirs := filepath.SplitList(path)
	if len(dirs) > maxPathDirs {
		dirs = dirs[:maxPathDirs]
	}
	for _, dir := range dirs {
		if filepath.IsAbs(dir) && isExecutable(filepath.Join(dir, name)) {
			return nil
		}
	}
	return fmt.Errorf("no executable %q is found on the node in $PATH %q", name, path)
}

func isExecutable(p string) bool {
	fi, err := os.Stat(p)
	return err == nil && fi.Mode().IsRegular() && fi.Mode()&0o111 != 0
}
