package validation

import (
	"os"
	"path/filepath"
	"strings"
	"testing"

	v1 "k8s.io/api/core/v1"

	"github.com/actorlet/actorlet/cri/procruntime"
	"github.com/actorlet/actorlet/test/testutil"
)

func TestProcessRuntimeErrors(t *testing.T) {
	bin := t.TempDir()
	testutil.WriteFile(t, bin, "tool", "#!/bin/sh\n")
	if err := os.Chmod(filepath.Join(bin, "tool"), 0o755); err != nil {
		t.Fatal(err)
	}
	testutil.WriteFile(t, bin, "data", "not executable")
	onlyBin := []v1.EnvVar{{Name: "PATH", Value: bin}}
	tests := []struct {
		name string
		spec v1.PodSpec
		want []string // substrings, one per expected error, in order
	}{
		{name: "command", spec: v1.PodSpec{Containers: []v1.Container{{Name: "c", Command: []string{"nope"}}}}},
		{name: "no command nor args",
			spec: v1.PodSpec{Containers: []v1.Container{{Name: "a", Command: []string{"sh"}}, {Name: "c"}}},
			want: []string{`spec.containers[1].command: Required value: the node's process runtime has no image entrypoint`}},
		{name: "init and ephemeral containers",
			spec: v1.PodSpec{InitContainers: []v1.Container{{Name: "i"}}, Containers: []v1.Container{{Name: "c", Command: []string{"sh"}}},
				EphemeralContainers: []v1.EphemeralContainer{{EphemeralContainerCommon: v1.EphemeralContainerCommon{Name: "d"}}}},
			want: []string{"spec.initContainers[0].command", "spec.ephemeralContainers[0].command"}},
		{name: "args-only, resolves", spec: v1.PodSpec{Containers: []v1.Container{{Name: "c", Args: []string{"tool", "-x"}, Env: onlyBin}}}},
		{name: "args-only, absolute, resolves", spec: v1.PodSpec{Containers: []v1.Container{{Name: "c", Args: []string{filepath.Join(bin, "tool")}}}}},
		{name: "args-only, does not resolve",
			spec: v1.PodSpec{Containers: []v1.Container{{Name: "c", Args: []string{"tcp-listen:5432,fork"}, Env: onlyBin}}},
			want: []string{`spec.containers[0].command: Required value: with no command the process runtime runs args[0] "tcp-listen:5432,fork" as the program, and no executable "tcp-listen:5432,fork" is found on the node`}},
		{name: "args-only, not executable",
			spec: v1.PodSpec{Containers: []v1.Container{{Name: "c", Args: []string{filepath.Join(bin, "data")}}}},
			want: []string{"is not an executable file on the node"}},
		{name: "args-only under a volume mount: an init container may write it",
			spec: v1.PodSpec{Containers: []v1.Container{{Name: "c", Args: []string{"/work-dir/app"}, VolumeMounts: []v1.VolumeMount{{Name: "w", MountPath: "/work-dir/"}}}}}},
		{name: "computed PATH is not checked",
			spec: v1.PodSpec{Containers: []v1.Container{{Name: "c", Args: []string{"nope"}, Env: []v1.EnvVar{{Name: "PATH", Value: "$(BASE):/x"}}}}}},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			errs := ProcessRuntimeErrors(&tt.spec, LookPath)
			if len(errs) != len(tt.want) {
				t.Fatalf("errors = %v, want %d", errs, len(tt.want))
			}
			for i, w := range tt.want {
				if !strings.Contains(errs[i].Error(), w) {
					t.Errorf("error %d = %q, want it to contain %q", i, errs[i].Error(), w)
				}
				if !strings.Contains(errs[i].Error(), "--container-runtime-endpoint") {
					t.Errorf("error %d = %q does not say what to do", i, errs[i].Error())
				}
			}
		})
	}
	// Without a lookPath (the CLI: it cannot see the node's files) only
	// the missing command is refused.
	spec := v1.PodSpec{Containers: []v1.Container{{Name: "c", Args: []string{"tcp-listen:5432,fork"}}, {Name: "d"}}}
	if errs := ProcessRuntimeErrors(&spec, nil); len(errs) != 1 || !strings.Contains(errs[0].Error(), "spec.containers[1].command") {
		t.Errorf("without lookPath: %v", errs)
	}
}

func TestLookPathBoundsPath(t *testing.T) {
	long := strings.Repeat("/nonexistent:", 10000) + "/bin"
	if err := LookPath("sh", long); err == nil {
		t.Errorf("sh found beyond the first %d $PATH entries", maxPathDirs)
	}
	if ProcessRuntimeName != procruntime.RuntimeName {
		t.Errorf("ProcessRuntimeName %q, the process runtime calls itself %q", ProcessRuntimeName, procruntime.RuntimeName)
	}
	if !IsProcessRuntime("actorlet-process://0.1.0") || IsProcessRuntime("containerd://1.7.2") || IsProcessRuntime("") {
		t.Error("IsProcessRuntime")
	}
}
