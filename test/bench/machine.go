package main

import (
	"bufio"
	"fmt"
	"os"
	"runtime"
	"strconv"
	"strings"
	"syscall"
	"time"
)

// machine describes where the figures were taken.
func machine() string {
	cpu := "unknown"
	if f, err := os.Open("/proc/cpuinfo"); err == nil {
		s := bufio.NewScanner(f)
		for s.Scan() {
			if k, v, ok := strings.Cut(s.Text(), ":"); ok && strings.TrimSpace(k) == "model name" {
				cpu = strings.TrimSpace(v)
				break
			}
		}
		f.Close()
	}
	var uts syscall.Utsname
	kernel := "unknown"
	if syscall.Uname(&uts) == nil {
		kernel = utsString(uts.Release[:])
	}
	return fmt.Sprintf("nproc %d, %d MiB memory, %s, Linux %s, %s, %s",
		runtime.NumCPU(), memTotalMiB(), cpu, kernel, runtime.Version(), time.Now().UTC().Format("2006-01-02 15:04 UTC"))
}

func utsString(b []int8) string {
	out := make([]byte, 0, len(b))
	for _, c := range b {
		if c == 0 {
			break
		}
		out = append(out, byte(c))
	}
	return string(out)
}

func memTotalMiB() int64 {
	data, err := os.ReadFile("/proc/meminfo")
	if err != nil {
		return 0
	}
	var kb int64
	fmt.Sscanf(string(data), "MemTotal: %d kB", &kb)
	return kb / 1024
}

// clockTicks is USER_HZ, the unit of utime/stime in /proc/<pid>/stat (100
// on every Linux architecture Go supports).
const clockTicks = 100

// procCPU is the user+system CPU time a process has used, from
// /proc/<pid>/stat ("self" for this process).
func procCPU(pid string) (time.Duration, error) {
	data, err := os.ReadFile("/proc/" + pid + "/stat")
	if err != nil {
		return 0, fmt.Errorf("read CPU time of process %s: %w", pid, err)
	}
	// Fields after the parenthesised command name; utime and stime are the
	// 14th and 15th fields of the line.
	s := string(data)
	rest := s[strings.LastIndexByte(s, ')')+2:]
	f := strings.Fields(rest)
	if len(f) < 13 {
		return 0, fmt.Errorf("parse /proc/%s/stat: %d fields", pid, len(f))
	}
	ut, _ := strconv.ParseInt(f[11], 10, 64)
	st, _ := strconv.ParseInt(f[12], 10, 64)
	return time.Duration(ut+st) * time.Second / clockTicks, nil
}

// procRSS is a process's resident set size in bytes, from /proc/<pid>/status.
func procRSS(pid string) (int64, error) {
	data, err := os.ReadFile("/proc/" + pid + "/status")
	if err != nil {
		return 0, fmt.Errorf("read RSS of process %s: %w", pid, err)
	}
	for _, line := range strings.Split(string(data), "\n") {
		if v, ok := strings.CutPrefix(line, "VmRSS:"); ok {
			kb, err := strconv.ParseInt(strings.TrimSpace(strings.TrimSuffix(strings.TrimSpace(v), "kB")), 10, 64)
			if err != nil {
				return 0, fmt.Errorf("parse VmRSS %q: %w", v, err)
			}
			return kb * 1024, nil
		}
	}
	return 0, fmt.Errorf("no VmRSS in /proc/%s/status", pid)
}

// cpuMeter measures a process's CPU use over a window.
type cpuMeter struct {
	pid   string
	cpu0  time.Duration
	wall0 time.Time
}

func startCPU(pid string) (*cpuMeter, error) {
	c, err := procCPU(pid)
	if err != nil {
		return nil, err
	}
	return &cpuMeter{pid: pid, cpu0: c, wall0: time.Now()}, nil
}

// percent is CPU time used since start per wall time, in percent of one core.
func (m *cpuMeter) percent() (float64, error) {
	c, err := procCPU(m.pid)
	if err != nil {
		return 0, err
	}
	return 100 * float64(c-m.cpu0) / float64(time.Since(m.wall0)), nil
}

// machineCPU is the CPU time all cores of the machine spent busy and idle
// (idle and iowait) since boot, from /proc/stat.
func machineCPU() (busy, idle time.Duration, err error) {
	data, err := os.ReadFile("/proc/stat")
	if err != nil {
		return 0, 0, fmt.Errorf("read machine CPU time: %w", err)
	}
	line, _, _ := strings.Cut(string(data), "\n")
	f := strings.Fields(line)
	if len(f) < 8 || f[0] != "cpu" {
		return 0, 0, fmt.Errorf("parse /proc/stat: first line %q", line)
	}
	var ticks [7]int64
	for i := range ticks {
		ticks[i], _ = strconv.ParseInt(f[i+1], 10, 64)
	}
	// user nice system idle iowait irq softirq
	b := ticks[0] + ticks[1] + ticks[2] + ticks[5] + ticks[6]
	if len(f) > 8 {
		steal, _ := strconv.ParseInt(f[8], 10, 64)
		b += steal
	}
	return time.Duration(b) * time.Second / clockTicks, time.Duration(ticks[3]+ticks[4]) * time.Second / clockTicks, nil
}

// cpuWindow is where the CPU went over a window: this process's (the
// in-process agent, NATS server and harness of the bench), the runtime
// process's (containerd; its shims are processes of their own) and the
// whole machine's busy time.
type cpuWindow struct {
	runtimePID                    string // "" or "self": not measured apart
	self0, runtime0, busy0, idle0 time.Duration
}

func startCPUWindow(runtimePID string) cpuWindow {
	w := cpuWindow{runtimePID: runtimePID}
	w.self0, _ = procCPU("self")
	if w.measuresRuntime() {
		w.runtime0, _ = procCPU(runtimePID)
	}
	w.busy0, w.idle0, _ = machineCPU()
	return w
}

func (w cpuWindow) measuresRuntime() bool { return w.runtimePID != "" && w.runtimePID != "self" }

// String is "self S s · runtime R s · machine busy B of T core-s": the
// bench process's CPU time, the runtime process's, the machine's busy CPU
// time and its whole capacity over the window (0 where /proc could not be
// read).
func (w cpuWindow) String() string {
	self, _ := procCPU("self")
	busy, idle, _ := machineCPU()
	busy, idle = busy-w.busy0, idle-w.idle0
	rt := ""
	if w.measuresRuntime() {
		r, _ := procCPU(w.runtimePID)
		rt = fmt.Sprintf(" · runtime %.1f s", (r - w.runtime0).Seconds())
	}
	return fmt.Sprintf("self %.1f s%s · machine busy %.1f of %.1f core-s", (self - w.self0).Seconds(), rt, busy.Seconds(), (busy + idle).Seconds())
}
