package agent

import (
	"strings"
	"testing"
)

// TestSandboxImageOf: the sandbox image is read from containerd 1.6/1.7's
// configuration in its verbose status; anything else names none.
func TestSandboxImageOf(t *testing.T) {
	for _, tc := range []struct{ config, want string }{
		{`{"containerd":{"snapshotter":"overlayfs"},"sandboxImage":"registry.k8s.io/pause:3.6"}`, "registry.k8s.io/pause:3.6"},
		{`{"sandboxer":"podsandbox"}`, ""}, // containerd 2.x: it pins the image itself
		{"", ""},
		{"{not json", ""},
		{`{"sandboxImage":"` + strings.Repeat("a", maxRuntimeConfigInfo) + `"}`, ""},
	} {
		if got := sandboxImageOf(tc.config); got != tc.want {
			t.Errorf("sandboxImageOf(%.60q) = %q, want %q", tc.config, got, tc.want)
		}
	}
}
