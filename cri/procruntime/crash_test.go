package procruntime_test

import (
	"context"
	"fmt"
	"math/rand"
	"os"
	"os/exec"
	"path/filepath"
	"sync"
	"syscall"
	"testing"
	"time"

	runtimeapi "k8s.io/cri-api/pkg/apis/runtime/v1"

	"github.com/actorlet/actorlet/cri"
	"github.com/actorlet/actorlet/cri/procruntime"
	"github.com/actorlet/actorlet/test/testutil"
)

// A runtime killed (SIGKILL) at random instants while it starts the 100
// containers of one sandbox, then restarted on the same root dir by a
// client that, like the agent, starts whatever is CREATED and creates
// whatever is missing: every container ends with exactly one process, and
// removing the sandbox leaves neither processes nor shims.
//
// Before starts were recorded ahead of the fork, a container whose process
// had been launched but whose start was not yet recorded came back CREATED
// and was started a second time.
func TestRuntimeKilledWhileStartingRunsEachContainerOnce(t *testing.T) {
	const (
		containers = 100
		iterations = 4
	)
	dir := t.TempDir()
	root, sock := filepath.Join(dir, "state"), filepath.Join(dir, "cri.sock")
	marker := fmt.Sprintf("procrt-crash-%d", time.Now().UnixNano())
	shimEnv := "ACTORLET_PROCRUNTIME_SHIM=" + root
	var server *exec.Cmd
	t.Cleanup(func() {
		if server != nil {
			_ = server.Process.Kill()
			_ = server.Wait()
		}
		// Whatever the outcome, nothing this test started survives it.
		if rt, err := procruntime.New(procruntime.Options{RootDir: root}); err == nil {
			rt.Destroy()
		}
		testutil.KillAll(testutil.ProcsWithArgPrefix(marker))
		testutil.KillAll(testutil.ProcsWithEnvPrefix(shimEnv))
	})
	serve := func() *cri.Client {
		t.Helper()
		server = exec.Command(os.Args[0], "-test.run=^$")
		server.Env = append(os.Environ(), serveRootEnv+"="+root, serveSockEnv+"="+sock)
		server.Stderr = os.Stderr
		if err := server.Start(); err != nil {
			t.Fatal(err)
		}
		ctx, cancel := context.WithTimeout(context.Background(), 30*time.Second)
		defer cancel()
		var c *cri.Client
		testutil.EventuallyEvery(t, 30*time.Second, 20*time.Millisecond, func() (err error) {
			c, err = cri.Dial(ctx, "unix://"+sock, cri.WithTimeout(30*time.Second))
			return err
		})
		return c
	}
	e := &env{t: t, logDir: filepath.Join(dir, "logs")}
	sbCfg := e.sandboxConfig("big", nil)
	cfg := func(i int) *runtimeapi.ContainerConfig {
		return containerConfig(fmt.Sprintf("c%03d", i), nil, "sh", "-c", "sleep 3600; exit 0", fmt.Sprintf("%s-%03d", marker, i))
	}

	// converge does what the agent does on every sync: start each CREATED
	// container, create and start each missing one. It stops at the first
	// error (the runtime was killed) and reports EXITED containers: none may
	// be, as nothing here ends a container.
	converge := func(c *cri.Client) (done bool) {
		bg := context.Background()
		sbs, err := c.ListPodSandbox(bg, nil)
		if err != nil {
			return false
		}
		// Containers need their image pulled first (CRI, as containerd).
		if _, err := c.PullImage(bg, cfg(0).Image, nil, nil); err != nil {
			return false
		}
		var sbID string
		if len(sbs) == 0 {
			if sbID, err = c.RunPodSandbox(bg, sbCfg, ""); err != nil {
				return false
			}
		} else {
			sbID = sbs[0].Id
		}
		list, err := c.ListContainers(bg, &runtimeapi.ContainerFilter{PodSandboxId: sbID})
		if err != nil {
			return false
		}
		byName := map[string]*runtimeapi.Container{}
		for _, ct := range list {
			if _, dup := byName[ct.Metadata.Name]; dup {
				t.Errorf("two containers named %s", ct.Metadata.Name)
			}
			byName[ct.Metadata.Name] = ct
		}
		work := make(chan int)
		var wg sync.WaitGroup
		var mu sync.Mutex
		failed := false
		for w := 0; w < 8; w++ {
			wg.Add(1)
			go func() {
				defer wg.Done()
				for i := range work {
					var err error
					ct := byName[cfg(i).Metadata.Name]
					switch {
					case ct == nil:
						var id string
						if id, err = c.CreateContainer(bg, sbID, cfg(i), sbCfg); err == nil {
							err = c.StartContainer(bg, id)
						}
					case ct.State == runtimeapi.ContainerState_CONTAINER_CREATED:
						err = c.StartContainer(bg, ct.Id)
					case ct.State == runtimeapi.ContainerState_CONTAINER_EXITED:
						st, _ := c.ContainerStatus(bg, ct.Id, false)
						t.Errorf("container %s EXITED (%v) though nothing ended it", ct.Metadata.Name, st.GetStatus())
					}
					if err != nil {
						mu.Lock()
						failed = true
						mu.Unlock()
					}
				}
			}()
		}
		for i := 0; i < containers; i++ {
			work <- i
		}
		close(work)
		wg.Wait()
		return !failed
	}

	rnd := rand.New(rand.NewSource(time.Now().UnixNano()))
	for it := 0; it < iterations; it++ {
		c := serve()
		kill := time.Duration(rnd.Int63n(int64(500 * time.Millisecond)))
		timer := time.AfterFunc(kill, func() { _ = server.Process.Signal(syscall.SIGKILL) })
		converge(c)
		timer.Stop()
		_ = server.Process.Signal(syscall.SIGKILL)
		_ = server.Wait()
		server = nil
		_ = c.Close()
		t.Logf("iteration %d: runtime killed after %s; %d container processes so far", it, kill, len(testutil.Leaders(testutil.ProcsWithArgPrefix(marker))))
	}

	// A last runtime, left alone, brings every container up.
	phase := time.Now()
	c := serve()
	defer c.Close()
	testutil.EventuallyEvery(t, 60*time.Second, 100*time.Millisecond, func() error {
		if !converge(c) {
			return fmt.Errorf("converge failed")
		}
		list, err := c.ListContainers(context.Background(), &runtimeapi.ContainerFilter{State: &runtimeapi.ContainerStateValue{State: runtimeapi.ContainerState_CONTAINER_RUNNING}})
		if err != nil {
			return err
		}
		if len(list) != containers {
			return fmt.Errorf("%d containers running, want %d", len(list), containers)
		}
		return nil
	})
	for i := 0; i < containers; i++ {
		// Group leaders only: a shell's fork shows the same arguments for
		// an instant.
		if ps := testutil.Leaders(testutil.ProcsWithArg(fmt.Sprintf("%s-%03d", marker, i))); len(ps) != 1 {
			t.Errorf("container c%03d has %d processes (%v), want exactly 1", i, len(ps), ps)
		}
	}

	t.Logf("all %d containers running after %s", containers, time.Since(phase).Round(time.Millisecond))
	phase = time.Now()
	sbs, err := c.ListPodSandbox(context.Background(), nil)
	if err != nil || len(sbs) != 1 {
		t.Fatalf("ListPodSandbox = %v, %v; want one sandbox", sbs, err)
	}
	if err := c.RemovePodSandbox(context.Background(), sbs[0].Id); err != nil {
		t.Fatal(err)
	}
	testutil.Eventually(t, 10*time.Second, func() error {
		if ps := testutil.ProcsWithArgPrefix(marker); len(ps) != 0 {
			return fmt.Errorf("%d container processes left after the sandbox was removed", len(ps))
		}
		if ps := testutil.ProcsWithEnvPrefix(shimEnv); len(ps) != 0 {
			return fmt.Errorf("%d shims left after the sandbox was removed", len(ps))
		}
		return nil
	})
	t.Logf("sandbox removed and nothing left after %s", time.Since(phase).Round(time.Millisecond))
}
