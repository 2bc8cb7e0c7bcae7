package testutil

import (
	"os"
	"path/filepath"
	"testing"
)

// WriteFile writes content to name under dir (making the directories
// between) and returns the file's path.
func WriteFile(t testing.TB, dir, name, content string) string {
	t.Helper()
	p := filepath.Join(dir, name)
	if err := os.MkdirAll(filepath.Dir(p), 0o755); err != nil {
		t.Fatal(err)
	}
	if err := os.WriteFile(p, []byte(content), 0o644); err != nil {
		t.Fatal(err)
	}
	return p
}
