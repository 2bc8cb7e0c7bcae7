// Package volume projects data into pod volumes the way the kubelet does
// for downwardAPI, configMap, secret and projected volumes: files written
// by an atomic writer, so a container sees an update all at once.
package volume

import (
	"bytes"
	"fmt"
	"io/fs"
	"os"
	"path/filepath"
	"slices"
	"strings"
	"time"
)

// Names inside a volume directory managed by the writer.
const (
	// DataDir is the symlink to the current timestamped directory; every
	// visible file is reached through it.
	DataDir = "..data"
	// dataTmp is the new symlink before it is renamed over DataDir.
	dataTmp = "..data_tmp"
	// tsPrefix starts the name of each timestamped directory.
	tsPrefix = ".."
)

// File is one projected file: its content and permission bits.
type File struct {
	Data []byte
	Mode fs.FileMode
}

// Write makes dir hold exactly payload (relative paths → files), as the
// kubelet's atomic writer: the files go into a new hidden timestamped
// directory, the ..data symlink is swapped to it with a rename (atomic),
// each top-level entry is a symlink through ..data, and the old directory
// is removed. A payload equal to what is there changes nothing. It reports
// whether anything was written.
//
// A reader that opens dir/<name> sees either the old or the new content of
// every file, never a mix of versions within one file. Paths must be
// relative, inside dir, and not start with "..".
func Write(dir string, payload map[string]File) (bool, error) {
	payload, err := validatePayload(payload)
	if err != nil {
		return false, err
	}
	if err := os.MkdirAll(dir, 0o755); err != nil {
		return false, fmt.Errorf("create volume directory: %w", err)
	}
	oldTS, _ := os.Readlink(filepath.Join(dir, DataDir))
	if oldTS != "" && same(filepath.Join(dir, oldTS), payload) {
		return false, nil
	}

	ts, err := os.MkdirTemp(dir, tsPrefix+time.Now().UTC().Format("2006_01_02_15_04_05.")) // ..<time>.<random>
	if err != nil {
		return false, fmt.Errorf("create timestamped directory: %w", err)
	}
	if err := os.Chmod(ts, 0o755); err != nil {
		os.RemoveAll(ts)
		return false, err
	}
	for p, f := range payload {
		full := filepath.Join(ts, p)
		if err := os.MkdirAll(filepath.Dir(full), 0o755); err != nil {
			os.RemoveAll(ts)
			return false, fmt.Errorf("write %s: %w", p, err)
		}
		if err := os.WriteFile(full, f.Data, f.Mode.Perm()); err != nil {
			os.RemoveAll(ts)
			return false, fmt.Errorf("write %s: %w", p, err)
		}
		if err := os.Chmod(full, f.Mode.Perm()); err != nil { // WriteFile honours the umask
			os.RemoveAll(ts)
			return false, fmt.Errorf("write %s: %w", p, err)
		}
	}

	// New top-level names get their symlink before the swap, so a name is
	// never visible without content.
	want := topLevel(payload)
	for name := range want {
		link := filepath.Join(dir, name)
		if target, err := os.Readlink(link); err == nil && target == filepath.Join(DataDir, name) {
			continue
		}
		if _, err := os.Lstat(link); err == nil {
			continue // an entry that is not ours: leave it
		}
		if err := os.Symlink(filepath.Join(DataDir, name), link); err != nil {
			os.RemoveAll(ts)
			return false, fmt.Errorf("link %s: %w", name, err)
		}
	}

	tmp := filepath.Join(dir, dataTmp)
	_ = os.Remove(tmp)
	if err := os.Symlink(filepath.Base(ts), tmp); err != nil {
		os.RemoveAll(ts)
		return false, fmt.Errorf("create %s: %w", dataTmp, err)
	}
	if err := os.Rename(tmp, filepath.Join(dir, DataDir)); err != nil {
		os.Remove(tmp)
		os.RemoveAll(ts)
		return false, fmt.Errorf("swap %s: %w", DataDir, err)
	}

	// After the swap: drop links to names gone from the payload, and old
	// timestamped directories.
	entries, _ := os.ReadDir(dir)
	for _, e := range entries {
		name := e.Name()
		full := filepath.Join(dir, name)
		switch {
		case name == DataDir || full == ts:
		case strings.HasPrefix(name, tsPrefix) && e.IsDir():
			os.RemoveAll(full)
		case e.Type()&fs.ModeSymlink != 0 && !want[name]:
			if target, err := os.Readlink(full); err == nil && target == filepath.Join(DataDir, name) {
				os.Remove(full)
			}
		}
	}
	return true, nil
}

// validatePayload checks every path and returns the payload with clean
// paths, as the kubelet's atomic writer: relative, inside the volume, no
// ".." element, not starting with ".." (the writer's own names), at most
// 4096 bytes; two paths naming the same file are refused ("a/../b" and
// "b" were written to one file, and "./a" was never linked).
func validatePayload(payload map[string]File) (map[string]File, error) {
	out := make(map[string]File, len(payload))
	from := make(map[string]string, len(payload))
	for p, f := range payload {
		clean := filepath.Clean(p)
		switch {
		case len(p) > 4096:
			return nil, fmt.Errorf("path %q: longer than 4096 bytes", p[:64])
		case p == "" || filepath.IsAbs(p) || !filepath.IsLocal(p) || clean == ".":
			return nil, fmt.Errorf("path %q: must be a relative path inside the volume", p)
		case strings.ContainsRune(p, 0):
			return nil, fmt.Errorf("path %q: must not contain a NUL byte", p)
		case slices.Contains(strings.Split(filepath.ToSlash(p), "/"), ".."):
			return nil, fmt.Errorf("path %q: must not contain '..'", p)
		case strings.HasPrefix(clean, ".."):
			return nil, fmt.Errorf("path %q: must not start with '..'", p)
		}
		if other, dup := from[clean]; dup {
			a, b := min(p, other), max(p, other)
			return nil, fmt.Errorf("paths %q and %q name the same file", a, b)
		}
		from[clean] = p
		out[clean] = f
	}
	return out, nil
}

// topLevel is the set of first path components of the payload.
func topLevel(payload map[string]File) map[string]bool {
	out := map[string]bool{}
	for p := range payload {
		out[strings.SplitN(filepath.ToSlash(p), "/", 2)[0]] = true
	}
	return out
}

// same reports whether the timestamped directory ts holds exactly payload.
func same(ts string, payload map[string]File) bool {
	var found []string
	err := filepath.WalkDir(ts, func(path string, d fs.DirEntry, err error) error {
		if err != nil {
			return err
		}
		if d.IsDir() {
			return nil
		}
		rel, _ := filepath.Rel(ts, path)
		f, ok := payload[rel]
		if !ok {
			return fs.ErrNotExist
		}
		info, err := d.Info()
		if err != nil || info.Mode().Perm() != f.Mode.Perm() {
			return fs.ErrNotExist
		}
		data, err := os.ReadFile(path)
		if err != nil || !bytes.Equal(data, f.Data) {
			return fs.ErrNotExist
		}
		found = append(found, rel)
		return nil
	})
	if err != nil || len(found) != len(payload) {
		return false
	}
	return true
}
