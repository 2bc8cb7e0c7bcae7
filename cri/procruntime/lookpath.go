package procruntime

import (
	"errors"
	"fmt"
	"os"
	"path/filepath"
	"strings"
)

// lookPathIn resolves a command the way a container would: a name with a
// slash is used as is (relative to the working directory), a bare name is
// searched in the container's PATH (not the agent's).
func lookPathIn(name string, env []string) (string, error) {
	if strings.Contains(name, "/") {
		return name, nil
	}
	path := ""
	for _, kv := range env {
		if v, ok := strings.CutPrefix(kv, "PATH="); ok {
			path = v
		}
	}
	for _, dir := range filepath.SplitList(path) {
		if !filepath.IsAbs(dir) {
			continue
		}
		p := filepath.Join(dir, name)
		fi, err := os.Stat(p)
		if err == nil && fi.Mode().IsRegular() && fi.Mode()&0o111 != 0 {
			return p, nil
		}
	}
	return "", fmt.Errorf("exec: %q: %w in $PATH %q", name, errNotFound, path)
}

var errNotFound = errors.New("executable file not found")
