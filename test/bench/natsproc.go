package main

import (
	"bufio"
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"net"
	"net/http"
	"net/url"
	"os"
	"os/exec"
	"os/signal"
	"path/filepath"
	"runtime/pprof"
	"strconv"
	"strings"
	"sync"
	"syscall"
	"time"

	"github.com/nats-io/nats-server/v2/server"
)

// natsChildArg, as the bench binary's first argument, makes it one
// nats-server of a cluster section's bus (natsChild). The cluster section
// runs its servers as processes of their own, as a fleet's servers are:
// in the harness's process they shared its Go scheduler and heap with
// 500 agents, and their Raft heartbeats waited behind the agents'
// goroutines until followers called elections (docs/benchmarks.md §7).
const natsChildArg = "-nats-server-child"

// natsSpec is what a child server is started with (a JSON file).
type natsSpec struct {
	Conf        string `json:"conf"` // the bus's server configuration (the authority's include)
	Name        string `json:"name"`
	StoreDir    string `json:"storeDir"`
	Port        int    `json:"port"`
	MonitorPort int    `json:"monitorPort"`
	ClusterPort int    `json:"clusterPort,omitempty"` // 0: no cluster
	Routes      []int  `json:"routes,omitempty"`      // the other servers' cluster ports
	CPUProfile  string `json:"cpuProfile,omitempty"`  // write the server's CPU profile here
}

// natsChild runs the server specPath describes until SIGTERM or until its
// stdin closes (the harness ended, however it ended).
func natsChild(specPath string) int {
	fail := func(err error) int {
		fmt.Fprintf(os.Stderr, "bench nats-server %s: %v\n", specPath, err)
		return 1
	}
	b, err := os.ReadFile(specPath)
	if err != nil {
		return fail(err)
	}
	var spec natsSpec
	if err := json.Unmarshal(b, &spec); err != nil {
		return fail(err)
	}
	if spec.CPUProfile != "" {
		f, err := os.Create(spec.CPUProfile)
		if err != nil {
			return fail(err)
		}
		defer f.Close()
		if err := pprof.StartCPUProfile(f); err != nil {
			return fail(err)
		}
		defer pprof.StopCPUProfile()
	}
	o, err := server.ProcessConfigFile(spec.Conf)
	if err != nil {
		return fail(fmt.Errorf("load %s: %w", spec.Conf, err))
	}
	o.ServerName, o.Host, o.Port = spec.Name, "127.0.0.1", spec.Port
	o.HTTPHost, o.HTTPPort = "127.0.0.1", spec.MonitorPort
	o.JetStream, o.StoreDir = true, spec.StoreDir
	o.NoSigs, o.NoLog, o.MaxPayload = true, true, 8<<20
	if spec.ClusterPort != 0 {
		o.Cluster = server.ClusterOpts{Name: "bench", Host: "127.0.0.1", Port: spec.ClusterPort}
		for _, p := range spec.Routes {
			o.Routes = append(o.Routes, &url.URL{Scheme: "nats-route", Host: fmt.Sprintf("127.0.0.1:%d", p)})
		}
	}
	s, err := server.NewServer(o)
	if err != nil {
		return fail(err)
	}
	go s.Start()
	if !s.ReadyForConnections(time.Minute) {
		s.Shutdown()
		return fail(errors.New("not ready for connections within a minute"))
	}
	fmt.Println("ready")
	done := make(chan struct{})
	go func() {
		_, _ = io.Copy(io.Discard, os.Stdin)
		close(done)
	}()
	sig := make(chan os.Signal, 1)
	signal.Notify(sig, syscall.SIGTERM, syscall.SIGINT)
	select {
	case <-sig:
	case <-done:
	}
	s.Shutdown()
	s.WaitForShutdown()
	return 0
}

// natsProc is one child server of a benchBus.
type natsProc struct {
	name          string
	port, monitor int
	cmd           *exec.Cmd
	stdin         io.WriteCloser
	ready, exited chan struct{}
}

// startNATSProcs starts n child servers from conf, a cluster when n > 1,
// and waits until each accepts connections. With profile, each writes
// its CPU profile to profile.<its name>.
func startNATSProcs(dir, conf string, n int, profile string) ([]*natsProc, error) {
	ports := make([]int, 3*n) // client, monitor, cluster of each
	for i := range ports {
		p, err := freeTCPPort()
		if err != nil {
			return nil, err
		}
		ports[i] = p
	}
	self, err := os.Executable()
	if err != nil {
		return nil, err
	}
	var procs []*natsProc
	stopAll := func() {
		for _, p := range procs {
			p.stop()
		}
	}
	for i := range n {
		spec := natsSpec{Conf: conf, Name: fmt.Sprintf("bench-%d", i+1), StoreDir: filepath.Join(dir, fmt.Sprintf("nats-%d", i+1)),
			Port: ports[3*i], MonitorPort: ports[3*i+1]}
		if profile != "" {
			spec.CPUProfile = profile + "." + spec.Name
		}
		if n > 1 {
			spec.ClusterPort = ports[3*i+2]
			for j := range n {
				if j != i {
					spec.Routes = append(spec.Routes, ports[3*j+2])
				}
			}
		}
		b, _ := json.Marshal(spec)
		specPath := filepath.Join(dir, spec.Name+".json")
		if err := os.WriteFile(specPath, b, 0o600); err != nil {
			stopAll()
			return nil, err
		}
		p, err := startNATSProc(self, specPath, spec)
		if err != nil {
			stopAll()
			return nil, err
		}
		procs = append(procs, p)
	}
	for _, p := range procs {
		if err := p.waitReady(time.Minute); err != nil {
			stopAll()
			return nil, err
		}
	}
	return procs, nil
}

func startNATSProc(self, specPath string, spec natsSpec) (*natsProc, error) {
	cmd := exec.Command(self, natsChildArg, specPath)
	cmd.Stderr = os.Stderr
	stdin, err := cmd.StdinPipe()
	if err != nil {
		return nil, err
	}
	stdout, err := cmd.StdoutPipe()
	if err != nil {
		return nil, err
	}
	if err := cmd.Start(); err != nil {
		return nil, fmt.Errorf("start nats-server %s: %w", spec.Name, err)
	}
	p := &natsProc{name: spec.Name, port: spec.Port, monitor: spec.MonitorPort, cmd: cmd, stdin: stdin,
		ready: make(chan struct{}), exited: make(chan struct{})}
	go func() {
		var once sync.Once
		sc := bufio.NewScanner(stdout)
		for sc.Scan() {
			if sc.Text() == "ready" {
				once.Do(func() { close(p.ready) })
			}
		}
		_ = cmd.Wait()
		close(p.exited)
	}()
	return p, nil
}

func (p *natsProc) waitReady(d time.Duration) error {
	select {
	case <-p.ready:
		return nil
	case <-p.exited:
		return fmt.Errorf("nats-server %s exited before it was ready", p.name)
	case <-time.After(d):
		return fmt.Errorf("nats-server %s not ready within %s", p.name, d)
	}
}

// cpu is the CPU time the server has used: read from /proc while it
// runs, from its exit status once it has ended (a killed server's too).
func (p *natsProc) cpu() time.Duration {
	select {
	case <-p.exited:
		return p.cmd.ProcessState.UserTime() + p.cmd.ProcessState.SystemTime()
	default:
		c, _ := procCPU(strconv.Itoa(p.cmd.Process.Pid))
		return c
	}
}

func (p *natsProc) clientURL() string { return fmt.Sprintf("nats://127.0.0.1:%d", p.port) }

func (p *natsProc) running() bool {
	select {
	case <-p.exited:
		return false
	default:
		return true
	}
}

// stop shuts the server down (SIGTERM: nats-server's own shutdown, as the
// in-process Shutdown was) and waits for it; one that does not end
// within a minute is killed.
func (p *natsProc) stop() {
	_ = p.stdin.Close()
	_ = p.cmd.Process.Signal(syscall.SIGTERM)
	select {
	case <-p.exited:
	case <-time.After(time.Minute):
		_ = p.cmd.Process.Kill()
		<-p.exited
	}
}

// monitorClient reads the servers' monitoring endpoints.
var monitorClient = &http.Client{Timeout: 30 * time.Second}

// get decodes the server's monitoring endpoint path (with its query) into v.
func (p *natsProc) get(ctx context.Context, path string, v any) error {
	req, err := http.NewRequestWithContext(ctx, http.MethodGet, fmt.Sprintf("http://127.0.0.1:%d%s", p.monitor, path), nil)
	if err != nil {
		return err
	}
	resp, err := monitorClient.Do(req)
	if err != nil {
		return err
	}
	defer resp.Body.Close()
	if resp.StatusCode != http.StatusOK {
		return fmt.Errorf("%s %s: %s", p.name, strings.SplitN(path, "?", 2)[0], resp.Status)
	}
	return json.NewDecoder(io.LimitReader(resp.Body, 256<<20)).Decode(v)
}

// freeTCPPort is a loopback port nothing listened on a moment ago.
func freeTCPPort() (int, error) {
	l, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		return 0, err
	}
	defer l.Close()
	return l.Addr().(*net.TCPAddr).Port, nil
}
