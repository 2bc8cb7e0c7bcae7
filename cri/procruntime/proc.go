package procruntime

import (
	"bytes"
	"errors"
	"fmt"
	"os"
	"strconv"
	"strings"
	"syscall"
)

// procID identifies one process instance: its PID and its start time (in
// clock ticks since boot, from /proc/<pid>/stat), so a reused PID is never
// mistaken for the process we started.
type procID struct {
	PID   int    `json:"pid"`
	Start uint64 `json:"start"`
}

// readProcStat returns the start time and state letter of pid.
func readProcStat(pid int) (start uint64, state byte, err error) {
	b, err := os.ReadFile("/proc/" + strconv.Itoa(pid) + "/stat")
	if err != nil {
		return 0, 0, err
	}
	// comm (field 2) may contain spaces and parentheses: split after the last ')'.
	i := bytes.LastIndexByte(b, ')')
	if i < 0 {
		return 0, 0, fmt.Errorf("parse /proc/%d/stat: no comm field", pid)
	}
	fields := strings.Fields(string(b[i+1:]))
	// fields[0] is field 3 (state); starttime is field 22.
	if len(fields) < 20 || len(fields[0]) != 1 {
		return 0, 0, fmt.Errorf("parse /proc/%d/stat: %d fields", pid, len(fields))
	}
	start, err = strconv.ParseUint(fields[19], 10, 64)
	if err != nil {
		return 0, 0, fmt.Errorf("parse /proc/%d/stat starttime: %w", pid, err)
	}
	return start, fields[0][0], nil
}

// identify returns the procID of a live pid.
func identify(pid int) (procID, error) {
	start, _, err := readProcStat(pid)
	if err != nil {
		return procID{}, fmt.Errorf("identify process %d: %w", pid, err)
	}
	return procID{PID: pid, Start: start}, nil
}

// alive reports whether the very process p still runs (a zombie does not).
func (p procID) alive() bool {
	if p.PID <= 0 {
		return false
	}
	start, state, err := readProcStat(p.PID)
	return err == nil && start == p.Start && state != 'Z' && state != 'X'
}

// signalGroup sends sig to p's process group, if p is still the process we
// started (p leads its group). A group already gone is not an error.
func (p procID) signalGroup(sig syscall.Signal) error {
	if !p.alive() {
		return nil
	}
	if err := syscall.Kill(-p.PID, sig); err != nil && !errors.Is(err, syscall.ESRCH) {
		return fmt.Errorf("signal process group %d with %v: %w", p.PID, sig, err)
	}
	return nil
}

// signal sends sig to p alone, if it is still the process we started.
func (p procID) signal(sig syscall.Signal) error {
	if !p.alive() {
		return nil
	}
	if err := syscall.Kill(p.PID, sig); err != nil && !errors.Is(err, syscall.ESRCH) {
		return fmt.Errorf("signal process %d with %v: %w", p.PID, sig, err)
	}
	return nil
}

// bootID identifies the current boot; records from another boot describe
// processes that cannot exist any more.
func bootID() string {
	b, err := os.ReadFile("/proc/sys/kernel/random/boot_id")
	if err != nil {
		return ""
	}
	return strings.TrimSpace(string(b))
}
