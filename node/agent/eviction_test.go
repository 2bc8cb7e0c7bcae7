package agent

import (
	"strings"
	"testing"
	"time"
)

func TestEvictionFlags(t *testing.T) {
	c, err := ParseFlags([]string{"--node-name", "n1", "--root-dir", t.TempDir()})
	if err != nil {
		t.Fatal(err)
	}
	if c.EvictionHard != "memory.available<100Mi,nodefs.available<10%,nodefs.inodesFree<5%,imagefs.available<15%" ||
		c.EvictionPressureTransitionPeriod != 5*time.Minute || c.EvictionMonitoringInterval != 10*time.Second || !c.LocalStorageCapacityIsolation {
		t.Errorf("defaults = %q %s %s %v", c.EvictionHard, c.EvictionPressureTransitionPeriod, c.EvictionMonitoringInterval, c.LocalStorageCapacityIsolation)
	}
	if c, err := ParseFlags([]string{"--node-name", "n1", "--root-dir", t.TempDir(), "--local-storage-capacity-isolation=false"}); err != nil || c.LocalStorageCapacityIsolation {
		t.Errorf("--local-storage-capacity-isolation=false: %v, %v", c.LocalStorageCapacityIsolation, err)
	}
	c, err = ParseFlags([]string{"--node-name", "n1", "--root-dir", t.TempDir(), "--eviction-hard", "memory.available<1Gi",
		"--eviction-soft", "memory.available<2Gi", "--eviction-soft-grace-period", "memory.available=1m",
		"--eviction-max-pod-grace-period", "30", "--eviction-memory-cgroup", "/actorlet", "--eviction-memory-capacity", "512Mi"})
	if err != nil {
		t.Fatal(err)
	}
	if ths, err := c.evictionThresholds(); err != nil || len(ths) != 2 {
		t.Errorf("thresholds = %+v, %v", ths, err)
	}
	for _, tt := range []struct {
		args []string
		want string
	}{
		{[]string{"--eviction-hard", "memory.avail<1Gi"}, `--eviction-hard: unsupported eviction signal "memory.avail"`},
		{[]string{"--eviction-soft", "memory.available<1Gi"}, "--eviction-soft: memory.available: a soft threshold needs a grace period"},
		{[]string{"--eviction-max-pod-grace-period", "-1"}, "eviction-max-pod-grace-period: must be 0 to 86400 seconds, got -1"},
		{[]string{"--eviction-monitoring-interval", "1ns"}, "eviction-monitoring-interval: must be 100ms to 24h0m0s"},
		{[]string{"--eviction-pressure-transition-period", "100000h"}, "eviction-pressure-transition-period: must be 0 to 24h0m0s"},
		{[]string{"--eviction-memory-capacity", "-5Mi"}, `eviction-memory-capacity: "-5Mi": want a positive quantity`},
		{[]string{"--eviction-memory-cgroup", "../../etc"}, `eviction-memory-cgroup: "../../etc"`},
	} {
		_, err := ParseFlags(append([]string{"--node-name", "n1", "--root-dir", t.TempDir()}, tt.args...))
		if err == nil || !strings.Contains(err.Error(), tt.want) {
			t.Errorf("ParseFlags(%v) = %v, want an error with %q", tt.args, err, tt.want)
		}
	}
}
