//go:build e2e

package e2e

import (
	"fmt"
	"os"
	"path/filepath"
	"strconv"
	"strings"
	"testing"
	"time"
)

// TestContainerLogRotation: with a small --container-log-max-size the
// agent rotates a chatty container's log through containerd's
// ReopenContainerLog: at most --container-log-max-files files, older ones
// gzip-compressed, and `logs --tail` reads across them with no line lost.
func TestContainerLogRotation(t *testing.T) {
	a := startAgent(t, agentOptions{args: []string{
		"--container-log-max-size", "32Ki", "--container-log-max-files", "4", "--container-log-monitor-interval", "1s",
	}})
	// ~25 KB a second: a rotation about every second.
	a.apply(t, shPod("chatty", "i=0; while true; do echo line$i; i=$((i+1)); if [ $((i % 100)) = 0 ]; then sleep 0.05; fi; done"))
	p := a.waitPod(t, "chatty", 2*time.Minute, isRunning)
	dir := filepath.Join(a.rootDir, "pod-logs", fmt.Sprintf("%s_%s_%s", namespace, "chatty", p.UID), "main")

	var files []string
	eventually(t, time.Minute, func() error {
		entries, err := os.ReadDir(dir)
		if err != nil {
			return err
		}
		files = files[:0]
		gz := 0
		for _, e := range entries {
			files = append(files, e.Name())
			if strings.HasSuffix(e.Name(), ".gz") {
				gz++
			}
		}
		if len(files) > 4 {
			t.Fatalf("%d log files %v, want at most 4", len(files), files)
		}
		if gz == 0 || len(files) < 4 {
			return fmt.Errorf("log files %v: want 4 with a compressed one", files)
		}
		return nil
	})
	t.Logf("log files: %v", files)

	out := a.mustCtl(t, "logs", "chatty", "-n", namespace, "--tail", "3000")
	lines := strings.Split(strings.TrimSuffix(out, "\n"), "\n")
	if len(lines) < 2000 {
		t.Fatalf("logs --tail 3000: %d lines", len(lines))
	}
	prev := -1
	for i, l := range lines {
		n, err := strconv.Atoi(strings.TrimPrefix(l, "line"))
		if err != nil {
			t.Fatalf("line %d: %q", i, l)
		}
		if prev >= 0 && n != prev+1 {
			t.Fatalf("line %d: line%d follows line%d: output lost or repeated across a rotation", i, n, prev)
		}
		prev = n
	}
}
