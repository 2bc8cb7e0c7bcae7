package agent

import (
	"fmt"
	"os"
	"path/filepath"
	"reflect"
	"strings"
	"testing"

	"github.com/actorlet/actorlet/messages"
)

// TestShutdownSettings: the flags make the kubelet's two groups, the
// file's shutdownGracePeriodByPodPriority its own (sorted), and bad or
// hostile values are refused naming the setting.
func TestShutdownSettings(t *testing.T) {
	dir := t.TempDir()
	file := func(content string) string {
		p := filepath.Join(dir, fmt.Sprintf("c%d.yaml", len(content)))
		if err := os.WriteFile(p, []byte(content), 0o644); err != nil {
			t.Fatal(err)
		}
		return p
	}
	var many strings.Builder
	many.WriteString("shutdownGracePeriodByPodPriority:\n")
	for i := range 65 {
		fmt.Fprintf(&many, "- {priority: %d, shutdownGracePeriodSeconds: 1}\n", i)
	}
	base := []string{"--root-dir", dir, "--node-name", "n1"}
	tests := []struct {
		name    string
		args    []string
		want    []messages.ShutdownGroup
		wantErr string
	}{
		{"off by default", nil, nil, ""},
		{"flags", []string{"--shutdown-grace-period=30s", "--shutdown-grace-period-critical-pods=10s"},
			[]messages.ShutdownGroup{{Priority: 0, GracePeriodSeconds: 20}, {Priority: 2000000000, GracePeriodSeconds: 10}}, ""},
		{"no critical part", []string{"--shutdown-grace-period=30s"},
			[]messages.ShutdownGroup{{Priority: 0, GracePeriodSeconds: 30}, {Priority: 2000000000, GracePeriodSeconds: 0}}, ""},
		{"by priority", []string{"--config", file("shutdownGracePeriodByPodPriority:\n- {priority: 100000, shutdownGracePeriodSeconds: 5}\n- {priority: 0, shutdownGracePeriodSeconds: 20}\n")},
			[]messages.ShutdownGroup{{Priority: 0, GracePeriodSeconds: 20}, {Priority: 100000, GracePeriodSeconds: 5}}, ""},
		{"critical above total", []string{"--shutdown-grace-period=10s", "--shutdown-grace-period-critical-pods=20s"}, nil, "shutdown-grace-period-critical-pods: 20s must not exceed"},
		{"negative", []string{"--shutdown-grace-period=-1s"}, nil, "shutdown-grace-period: must be 0 (off) to 24h0m0s, got -1s"},
		{"sub-second", []string{"--shutdown-grace-period=1500ms"}, nil, "shutdown-grace-period: must be whole seconds"},
		{"huge", []string{"--shutdown-grace-period=1000000h"}, nil, "shutdown-grace-period: must be 0 (off) to 24h0m0s"},
		{"both forms", []string{"--shutdown-grace-period=30s", "--config", file("shutdownGracePeriodByPodPriority: [{priority: 0, shutdownGracePeriodSeconds: 1}]\n")}, nil, "cannot be set with shutdown-grace-period"},
		{"too many groups", []string{"--config", file(many.String())}, nil, "65 entries, at most 64"},
		{"duplicate priority", []string{"--config", file("shutdownGracePeriodByPodPriority: [{priority: 7, shutdownGracePeriodSeconds: 1}, {priority: 7, shutdownGracePeriodSeconds: 2}]\n")}, nil, "[1].priority: 7 appears twice"},
		{"negative seconds", []string{"--config", file("shutdownGracePeriodByPodPriority: [{priority: 7, shutdownGracePeriodSeconds: -3}]\n")}, nil, "[0].shutdownGracePeriodSeconds: must be 0 to 86400, got -3"},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			cfg, err := ParseFlags(append(append([]string(nil), base...), tc.args...))
			if tc.wantErr != "" {
				if err == nil || !strings.Contains(err.Error(), tc.wantErr) {
					t.Fatalf("err = %v, want %q", err, tc.wantErr)
				}
				return
			}
			if err != nil {
				t.Fatal(err)
			}
			if got := cfg.shutdownGroups(); !reflect.DeepEqual(got, tc.want) {
				t.Fatalf("groups = %+v, want %+v", got, tc.want)
			}
		})
	}
}
