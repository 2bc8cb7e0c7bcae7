package testutil

import (
	"fmt"
	"os"
	"strings"
	"syscall"
	"testing"
)

// HostSnapshot is what a test checks a pod never changed on the host: the
// mode and owner of each of dirs and of each of statOnly, and the entries
// of dirs (statOnly are directories other work on the machine adds to,
// such as /tmp).
func HostSnapshot(t testing.TB, dirs, statOnly []string) string {
	t.Helper()
	var b strings.Builder
	for _, d := range append(append([]string{}, dirs...), statOnly...) {
		var st syscall.Stat_t
		if err := syscall.Stat(d, &st); err != nil {
			t.Fatal(err)
		}
		fmt.Fprintf(&b, "%s %o %d:%d\n", d, st.Mode, st.Uid, st.Gid)
	}
	for _, d := range dirs {
		entries, err := os.ReadDir(d)
		if err != nil {
			t.Fatal(err)
		}
		for _, e := range entries {
			fmt.Fprintf(&b, "%s/%s\n", strings.TrimSuffix(d, "/"), e.Name())
		}
	}
	return b.String()
}

// MountsUnder lists the host's mounts (lines of /proc/self/mountinfo) at or
// below any of dirs: what a test's runtime could have left behind.
func MountsUnder(t testing.TB, dirs ...string) []string {
	t.Helper()
	b, err := os.ReadFile("/proc/self/mountinfo")
	if err != nil {
		t.Fatal(err)
	}
	var out []string
	for _, l := range strings.Split(strings.TrimSpace(string(b)), "\n") {
		f := strings.Fields(l)
		if len(f) < 5 {
			continue
		}
		for _, d := range dirs {
			if f[4] == d || strings.HasPrefix(f[4], d+"/") {
				out = append(out, l)
				break
			}
		}
	}
	return out
}
