package testutil

import (
	"bytes"
	"os"
	"slices"
	"strconv"
	"strings"
	"syscall"
)

// Proc is a live process found by walking /proc.
type Proc struct {
	PID  int
	PGID int // process group
	Args []string
	Env  []string // "NAME=value" as the process was started with
}

// Leader reports whether p leads its process group. A container's main
// process does; a shell's short-lived fork (which shows the same
// arguments until it execs) does not.
func (p Proc) Leader() bool { return p.PID == p.PGID }

// Leaders keeps the processes that lead their process group.
func Leaders(procs []Proc) []Proc {
	var out []Proc
	for _, p := range procs {
		if p.Leader() {
			out = append(out, p)
		}
	}
	return out
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
		i := bytes.LastIndexByte(stat, ')')
		if i < 0 {
			continue
		}
		fields := strings.Fields(string(stat[i+1:])) // state, ppid, pgrp, ...
		if len(fields) < 3 || fields[0] == "Z" || fields[0] == "X" {
			continue
		}
		pgid, _ := strconv.Atoi(fields[2])
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
			out = append(out, Proc{PID: pid, PGID: pgid, Args: args, Env: env})
		}
	}
	return out
}

// ProcsWithArg returns the live processes that have an argument equal to arg.
func ProcsWithArg(arg string) []Proc {
	return Procs(func(args, _ []string) bool { return slices.Contains(args, arg) })
}

// ProcsWithArgPrefix returns the live processes with an argument starting
// with prefix.
func ProcsWithArgPrefix(prefix string) []Proc {
	return Procs(func(args, _ []string) bool { return anyHasPrefix(args, prefix) })
}

// ProcsWithEnvPrefix returns the live processes with an environment entry
// starting with prefix ("NAME=value-prefix").
func ProcsWithEnvPrefix(prefix string) []Proc {
	return Procs(func(_, env []string) bool { return anyHasPrefix(env, prefix) })
}

func anyHasPrefix(list []string, prefix string) bool {
	return slices.ContainsFunc(list, func(s string) bool { return strings.HasPrefix(s, prefix) })
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

// ProcsWritingUnder returns the live processes whose standard output is a
// file under dir: the process runtime's sandbox holders, which carry no
// mark of their runtime in their arguments or environment but write
// holder.log in its state directory.
func ProcsWritingUnder(dir string) []Proc {
	var out []Proc
	for _, p := range Procs(func(_, _ []string) bool { return true }) {
		if target, err := os.Readlink("/proc/" + strconv.Itoa(p.PID) + "/fd/1"); err == nil && strings.HasPrefix(target, dir+"/") {
			out = append(out, p)
		}
	}
	return out
}
