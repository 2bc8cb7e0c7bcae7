package testenv

import (
	"errors"
	"os"
	"path/filepath"
	"strings"
	"syscall"
	"testing"
	"time"

	"github.com/actorlet/actorlet/cri/cm"
)

// CgroupRoot registers with t.Cleanup the removal of the QoS cgroup
// hierarchy (cgroupfs) a test's agent makes under root, and the check that
// nothing of it is left in any controller. Call it before starting the
// agent: cleanups run last-in first-out, so this one runs after the agent
// and its containers are gone.
func CgroupRoot(t testing.TB, root string) {
	t.Helper()
	t.Cleanup(func() {
		m, err := cm.New(cm.Options{Driver: cm.DriverCgroupfs, Root: root})
		if err == nil {
			err = m.Destroy()
		}
		if err != nil {
			t.Errorf("remove the cgroups under %s: %v", root, err)
		}
		if left, _ := filepath.Glob(filepath.Join("/sys/fs/cgroup", "*", root)); len(left) > 0 {
			t.Errorf("cgroups left: %v", left)
		}
	})
}

// ReadCgroupV1 is file of the cgroup p in controller ctrl of a cgroup v1
// hierarchy, without surrounding space; "" after reporting with t.Errorf
// when it cannot be read.
func ReadCgroupV1(t testing.TB, ctrl, p, file string) string {
	t.Helper()
	b, err := os.ReadFile(filepath.Join("/sys/fs/cgroup", ctrl, p, file))
	if err != nil {
		t.Errorf("read %s: %v", file, err)
		return ""
	}
	return strings.TrimSpace(string(b))
}

// CgroupV1Want is what File of the cgroup Path in controller Ctrl (cgroup
// v1) must hold; What names it in a failure.
type CgroupV1Want struct{ Ctrl, Path, File, Want, What string }

// CheckCgroupV1 reports with t.Errorf each file of ws that does not hold
// what it must.
func CheckCgroupV1(t testing.TB, ws []CgroupV1Want) {
	t.Helper()
	for _, w := range ws {
		if got := ReadCgroupV1(t, w.Ctrl, w.Path, w.File); got != w.Want {
			t.Errorf("%s %s, want %s", w.What, got, w.Want)
		}
	}
}

// processRuntimeCgroupParent is where the process runtime puts a
// container's cgroups when its sandbox names no parent (agents started
// with --cgroups-per-qos=false, as tests sharing the host are).
const processRuntimeCgroupParent = "actorlet"

// RemoveContainerCgroups removes the per-container cgroups of every
// container the process runtime with state under each runtimeRoot made
// (their processes must be gone). A test that kills an agent leaves them:
// only RemoveContainer, or a runtime's Destroy, removes them. It reports
// with t.Errorf a cgroup that stays.
func RemoveContainerCgroups(t testing.TB, runtimeRoots ...string) {
	t.Helper()
	for _, root := range runtimeRoots {
		ids, _ := filepath.Glob(filepath.Join(root, "containers", "*"))
		for _, p := range ids {
			dirs, _ := filepath.Glob(filepath.Join("/sys/fs/cgroup", "*", processRuntimeCgroupParent, filepath.Base(p)))
			for _, d := range dirs {
				if err := removeCgroupDir(d); err != nil {
					t.Errorf("remove container cgroup: %v", err)
				}
			}
		}
	}
}

// removeCgroupDir removes the empty cgroup d, waiting a moment for its
// last processes to leave (EBUSY meanwhile).
func removeCgroupDir(d string) error {
	deadline := time.Now().Add(5 * time.Second)
	for {
		err := os.Remove(d)
		if err == nil || errors.Is(err, os.ErrNotExist) {
			return nil
		}
		if !errors.Is(err, syscall.EBUSY) || time.Now().After(deadline) {
			return err
		}
		time.Sleep(20 * time.Millisecond)
	}
}
