package volume

import (
	"bytes"
	"io/fs"
	"os"
	"path/filepath"
	"strings"
	"testing"
)

// FuzzWritePaths: whatever the paths of a payload (they come from pod
// specs: items[].path of configMap, secret, downwardAPI and projected
// volumes), Write either refuses them or writes every file where the
// container reads it (dir/<path> through ..data) and nothing outside dir;
// a second write replaces the first. Seeds: the hostile paths of
// TestWriteRejectsBadPaths. `make fuzz` runs it briefly; explore with
// `go test -run=^$ -fuzz=FuzzWritePaths ./cri/volume/`.
func FuzzWritePaths(f *testing.F) {
	for _, p := range []string{"a", "a/b", "", "/etc/passwd", "../escape", "a/../../b", "..data", "..hidden",
		"a/../b", "./a", ".", "a//b", "a/./b", "a/", "..", "...", "....x", "a\x00b", strings.Repeat("d/", 100) + "f"} {
		f.Add(p, "b", []byte("data"))
	}
	f.Fuzz(func(t *testing.T, p1, p2 string, data []byte) {
		root := t.TempDir()
		dir := filepath.Join(root, "vol")
		for round, payload := range []map[string]File{
			{p1: {Data: data, Mode: 0o644}, p2: {Data: []byte("other"), Mode: 0o600}},
			{p1: {Data: append([]byte("v2-"), data...), Mode: 0o640}},
		} {
			_, err := Write(dir, payload)
			if err == nil {
				for p, want := range payload {
					got, rerr := os.ReadFile(filepath.Join(dir, p))
					if rerr != nil || !bytes.Equal(got, want.Data) {
						t.Fatalf("round %d: accepted path %q reads %q, %v; want %q", round, p, got, rerr, want.Data)
					}
				}
			}
			// Nothing outside dir, ever.
			err = filepath.WalkDir(root, func(path string, d fs.DirEntry, err error) error {
				if err != nil {
					return err
				}
				if path != root && path != dir && !strings.HasPrefix(path, dir+string(filepath.Separator)) {
					t.Fatalf("round %d: payload %q wrote %s outside the volume", round, keys(payload), path)
				}
				if d.Type()&fs.ModeSymlink != 0 {
					target, _ := os.Readlink(path)
					resolved, rerr := filepath.EvalSymlinks(path)
					if filepath.IsAbs(target) || (rerr == nil && !strings.HasPrefix(resolved, dir+string(filepath.Separator))) {
						t.Fatalf("round %d: link %s -> %s leaves the volume", round, path, target)
					}
				}
				return nil
			})
			if err != nil {
				t.Fatal(err)
			}
		}
	})
}

func keys(m map[string]File) []string {
	var out []string
	for k := range m {
		out = append(out, k)
	}
	return out
}
