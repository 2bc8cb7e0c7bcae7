package eviction

import (
	"errors"
	"fmt"
	"os"
	"path/filepath"
	"strconv"

	"golang.org/x/sys/unix"
)

// memoryNotifier is a cgroup v1 memory threshold (the kubelet's
// memory_threshold_notifier): the kernel signals an eventfd when the
// cgroup's memory.usage_in_bytes crosses the threshold, so a round runs at
// once instead of at the next interval.
type memoryNotifier struct {
	threshold uint64
	efd       *os.File
	usage     *os.File
}

// armMemoryNotifier registers threshold bytes of usage on the memory
// cgroup dir through its cgroup.event_control.
func armMemoryNotifier(dir string, threshold uint64) (*memoryNotifier, error) {
	fd, err := unix.Eventfd(0, unix.EFD_CLOEXEC|unix.EFD_NONBLOCK)
	if err != nil {
		return nil, fmt.Errorf("eventfd: %w", err)
	}
	efd := os.NewFile(uintptr(fd), "memory-threshold-eventfd") // non-blocking: Close ends a Read
	usage, err := os.Open(filepath.Join(dir, "memory.usage_in_bytes"))
	if err != nil {
		efd.Close()
		return nil, err
	}
	ctl := filepath.Join(dir, "cgroup.event_control")
	line := strconv.Itoa(fd) + " " + strconv.Itoa(int(usage.Fd())) + " " + strconv.FormatUint(threshold, 10)
	if err := os.WriteFile(ctl, []byte(line), 0o200); err != nil {
		efd.Close()
		usage.Close()
		return nil, fmt.Errorf("register a memory threshold in %s: %w", ctl, err)
	}
	return &memoryNotifier{threshold: threshold, efd: efd, usage: usage}, nil
}

// wait calls crossed each time the threshold is crossed, until close.
func (n *memoryNotifier) wait(crossed func()) {
	buf := make([]byte, 8)
	for {
		if _, err := n.efd.Read(buf); err != nil {
			if !errors.Is(err, os.ErrClosed) {
				crossed() // a round reads the stats again; the next arming logs what is wrong
			}
			return
		}
		crossed()
	}
}

// close unregisters the threshold (the kernel drops it with the eventfd).
func (n *memoryNotifier) close() {
	n.efd.Close()
	n.usage.Close()
}

// memoryThresholdUsage is the memory cgroup usage at which the threshold
// is crossed: capacity less the threshold's amount, plus the inactive file
// pages the working set leaves out (the kubelet's UpdateThreshold). Zero
// when it cannot be crossed.
func memoryThresholdUsage(th Threshold, s Stats) uint64 {
	if s.MemoryCapacity == 0 {
		return 0
	}
	amount := uint64(th.Value.amount(resourceBytes(s.MemoryCapacity)).Value())
	if amount >= s.MemoryCapacity {
		return 0
	}
	return s.MemoryCapacity - amount + s.MemoryInactiveFile
}
