// Package e2eenv reads what test/e2e/setup.sh wrote about the containerd it
// set up: which version, its CRI endpoint, pid file, task directory and pod
// subnet. The e2e suite and the bench read it, so both talk to the
// containerd the setup chose (ACTORLET_E2E_CONTAINERD: "2", the default, or
// "1.6"; the two run side by side on separate sockets).
package e2eenv

import (
	"bufio"
	"bytes"
	"fmt"
	"io"
	"os"
	"path/filepath"
	"strconv"
	"strings"
)

// FlavorVar names the environment variable that picks the containerd.
const FlavorVar = "ACTORLET_E2E_CONTAINERD"

// Flavors are the values of FlavorVar setup.sh knows; the first is the
// default.
var Flavors = []string{"2", "1.6"}

// maxFile bounds the env file read: setup.sh writes a few hundred bytes.
const maxFile = 64 << 10

// Containerd is one flavor's setup.
type Containerd struct {
	Flavor   string // FlavorVar's value: "2" or "1.6"
	Version  string // containerd --version, e.g. v2.4.2 or 1.6.20~ds1
	Endpoint string // CRI endpoint, unix://…
	PIDFile  string // holds the containerd's pid
	TaskDir  string // the runc shims' task bundles of CRI's namespace (k8s.io)
	Subnet   string // the pods' CNI subnet (CIDR)
	Log      string // containerd's log file
}

// Flavor is FlavorVar's value, or the default when unset or empty.
func Flavor() string {
	if f := os.Getenv(FlavorVar); f != "" {
		return f
	}
	return Flavors[0]
}

// StateDir is setup.sh's state directory (ACTORLET_E2E_STATE or
// /var/lib/actorlet-e2e).
func StateDir() string {
	if d := os.Getenv("ACTORLET_E2E_STATE"); d != "" {
		return d
	}
	return "/var/lib/actorlet-e2e"
}

// Path is where setup.sh writes flavor's env file.
func Path(flavor string) string {
	return filepath.Join(StateDir(), "containerd-"+flavor+".env")
}

// Load reads flavor's env file. It fails on an unknown flavor, a file
// missing (setup.sh not run for that flavor), too large, with a line that is
// not KEY=VALUE, or without one of the keys every field needs.
func Load(flavor string) (Containerd, error) {
	known := false
	for _, f := range Flavors {
		known = known || f == flavor
	}
	if !known {
		return Containerd{}, fmt.Errorf("%s=%q: want one of %s", FlavorVar, flavor, strings.Join(Flavors, ", "))
	}
	path := Path(flavor)
	b, err := readFile(path)
	if os.IsNotExist(err) {
		return Containerd{}, fmt.Errorf("containerd %s: %w (run test/e2e/setup.sh with %s=%s as root)", flavor, err, FlavorVar, flavor)
	}
	if err != nil {
		return Containerd{}, err
	}
	c, err := parse(b)
	if err != nil {
		return Containerd{}, fmt.Errorf("%s: %w", path, err)
	}
	if c.Flavor != flavor {
		return Containerd{}, fmt.Errorf("%s: %s=%q, want %q", path, FlavorVar, c.Flavor, flavor)
	}
	return c, nil
}

func parse(b []byte) (Containerd, error) {
	var c Containerd
	fields := map[string]*string{
		FlavorVar: &c.Flavor, "VERSION": &c.Version, "ENDPOINT": &c.Endpoint, "PIDFILE": &c.PIDFile,
		"TASK_DIR": &c.TaskDir, "SUBNET": &c.Subnet, "LOG": &c.Log,
	}
	sc := bufio.NewScanner(bytes.NewReader(b))
	for n := 1; sc.Scan(); n++ {
		line := strings.TrimSpace(sc.Text())
		if line == "" || strings.HasPrefix(line, "#") {
			continue
		}
		k, v, ok := strings.Cut(line, "=")
		if !ok {
			return Containerd{}, fmt.Errorf("line %d: want KEY=VALUE, have %q", n, line)
		}
		if dst := fields[k]; dst != nil {
			*dst = v
		}
	}
	if err := sc.Err(); err != nil {
		return Containerd{}, err
	}
	for k, v := range fields {
		if *v == "" {
			return Containerd{}, fmt.Errorf("no %s", k)
		}
	}
	if !strings.HasPrefix(c.Endpoint, "unix://") {
		return Containerd{}, fmt.Errorf("ENDPOINT %q: want unix://PATH", c.Endpoint)
	}
	return c, nil
}

// PID is the containerd's pid, read from its pid file.
func (c Containerd) PID() (int, error) {
	b, err := readFile(c.PIDFile)
	if err != nil {
		return 0, err
	}
	pid, err := strconv.Atoi(strings.TrimSpace(string(b)))
	if err != nil || pid <= 0 {
		return 0, fmt.Errorf("%s: %q is not a pid", c.PIDFile, strings.TrimSpace(string(b)))
	}
	return pid, nil
}

// readFile reads path, failing when it holds more than maxFile bytes.
func readFile(path string) ([]byte, error) {
	f, err := os.Open(path)
	if err != nil {
		return nil, err
	}
	defer f.Close()
	b, err := io.ReadAll(io.LimitReader(f, maxFile+1))
	if err != nil {
		return nil, fmt.Errorf("read %s: %w", path, err)
	}
	if len(b) > maxFile {
		return nil, fmt.Errorf("%s: larger than %d bytes", path, maxFile)
	}
	return b, nil
}
