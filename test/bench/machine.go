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
