package testutil

import (
	"bytes"
	"os"
	"strconv"
	"strings"
	"syscall"
)

// Proc is a live process found by walking /proc.
type Proc struct {
	PID  int
	Args []string
}

// Procs walks /proc and returns the live (not zombie) processes for which
// match, given the process' argv and environment, holds. Processes that
// vanish or cannot be read are skipped.
func Procs(match func(args, env []string) bool) []Proc {
	entries, _ := os.ReadDir("/proc")
	var out []Proc
	for _, e := range entries {
		pid, err := strconv.Atoi(e.Name())
		if err != nil {
			continue
		}
		dir := "/proc/" + e.Name()
		stat, err := os.ReadFile(dir + "/stat")
		if err != nil {
			continue
		}
		if i := bytes.LastIndexByte(stat, ')'); i < 0 || len(stat) < i+3 || stat[i+2] == 'Z' || stat[i+2] == 'X' {
			continue
		}
		cmdline, err := os.ReadFile(dir + "/cmdline")
		if err != nil || len(cmdline) == 0 {
			continue
		}
		args := splitNUL(cmdline)
		var env []string
		if b, err := os.ReadFile(dir + "/environ"); err == nil {
			env = splitNUL(b)
		}
		if match(args, env) {
			out = append(out, Proc{PID: pid, Args: args})
		}
	}
	return out
}

// ProcsWithArg returns the live processes that have an argument equal to arg.
func ProcsWithArg(arg string) []Proc {
	return Procs(func(args, _ []string) bool {
		for _, a := range args {
			if a == arg {
				return true
			}
		}
		return false
	})
}

// ProcsWithArgPrefix returns the live processes with an argument starting
// with prefix.
func ProcsWithArgPrefix(prefix string) []Proc {
	return Procs(func(args, _ []string) bool {
		for _, a := range args {
			if strings.HasPrefix(a, prefix) {
				return true
			}
		}
		return false
	})
}

// ProcsWithEnvPrefix returns the live processes with an environment entry
// starting with prefix ("NAME=value-prefix").
func ProcsWithEnvPrefix(prefix string) []Proc {
	return Procs(func(_, env []string) bool {
		for _, kv := range env {
			if strings.HasPrefix(kv, prefix) {
				return true
			}
		}
		return false
	})
}

// KillAll sends SIGKILL to each process (cleanup of tests that start
// processes which outlive them).
func KillAll(procs []Proc) {
	for _, p := range procs {
		_ = syscall.Kill(p.PID, syscall.SIGKILL)
	}
}

func splitNUL(b []byte) []string {
	b = bytes.TrimRight(b, "\x00")
	if len(b) == 0 {
		return nil
	}
	return strings.Split(string(b), "\x00")
}
