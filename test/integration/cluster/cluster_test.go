package cluster

import (
	"bytes"
	"context"
	"fmt"
	"github.com/actorlet/actorlet/messages/wire"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"sync"
	"testing"
	"time"
)

const (
	agents      = 10
	podsPerNode = 20
	writers     = 4
	// killAfter is how many acknowledged writes the apply makes before
	// the stream leader's server is killed.
	killAfter = 50
)

var desiredStream = "KV_" + wire.DesiredBucket

// writeResult is what the operator was told about one write.
type writeResult struct {
	pod podRef
	rev uint64 // acknowledged revision; 0 when the write failed
	err error
}

// TestClusterFailures runs one fleet through server failures in order:
// the stream leader dies during an apply, it comes back and catches up,
// the server a node is connected to dies, and a majority of the cluster
// is stopped and started again.
func TestClusterFailures(t *testing.T) {
	if testing.Short() {
		t.Skip("cluster failures: -short")
	}
	start := time.Now()
	f := newFleet(t, agents)
	t.Logf("cluster and %d agents up in %s", agents, time.Since(start).Round(time.Millisecond))

	var all []podRef
	for _, n := range f.nodes {
		for i := range podsPerNode {
			all = append(all, podRef{node: n.name, name: fmt.Sprintf("p%d", i)})
		}
	}
	killed := t.Run("LeaderKilledDuringApply", func(t *testing.T) { f.leaderKilledDuringApply(t, all) })
	if !killed {
		t.FailNow()
	}
	step := func(name string, run func(*testing.T)) {
		began := time.Now()
		if !t.Run(name, run) {
			t.FailNow()
		}
		t.Logf("%s took %s", name, time.Since(began).Round(time.Millisecond))
	}
	step("NodeServerKilled", func(t *testing.T) { all = f.nodeServerKilled(t, all) })
	step("QuorumLost", func(t *testing.T) { all = f.quorumLost(t, all) })
	t.Logf("all scenarios took %s", time.Since(start).Round(time.Millisecond))
}

// leaderKilledDuringApply: operators apply every pod while the desired
// stream's leader is killed; then the server comes back and catches up.
func (f *fleet) leaderKilledDuringApply(t *testing.T, pods []podRef) {
	f.t = t
	leader := f.cl.WaitStreamLeader(desiredStream)
	desired := f.kv(wire.DesiredBucket)

	work := make(chan podRef)
	results := make(chan writeResult, len(pods))
	var wg sync.WaitGroup
	for range writers {
		wg.Add(1)
		go func() {
			defer wg.Done()
			for p := range work {
				ctx, cancel := context.WithTimeout(context.Background(), 5*time.Second)
				rev, err := desired.Put(ctx, p.desiredKey(), podJSON(p.name))
				cancel()
				results <- writeResult{pod: p, rev: rev, err: err}
			}
		}()
	}
	// Feed the writers; kill the leader once killAfter writes are in.
	sent := 0
	for _, p := range pods {
		if sent == killAfter {
			// Let the first writes land, then kill the stream leader's server
			// while the rest are being written.
			f.cl.Stop(leader)
			t.Logf("stopped %s, the leader of %s, after %d writes", f.cl.ServerName(leader), desiredStream, sent)
		}
		work <- p
		sent++
	}
	close(work)
	wg.Wait()
	close(results)

	// Every write has an outcome; the acknowledged ones are all stored.
	var failed []podRef
	outcomes := 0
	for r := range results {
		outcomes++
		if r.err != nil {
			failed = append(failed, r.pod)
			continue
		}
		var e interface {
			Revision() uint64
			Value() []byte
		}
		f.eventually("read back "+r.pod.desiredKey(), func() error {
			ctx, cancel := context.WithTimeout(context.Background(), attempt)
			defer cancel()
			got, err := desired.Get(ctx, r.pod.desiredKey())
			if err != nil {
				return err
			}
			e = got
			return nil
		})
		if e.Revision() < r.rev || !bytes.Equal(e.Value(), podJSON(r.pod.name)) {
			t.Errorf("write of %s acknowledged at revision %d but the bucket has revision %d", r.pod.desiredKey(), r.rev, e.Revision())
		}
	}
	if outcomes != len(pods) {
		t.Fatalf("%d writes have an outcome, want %d", outcomes, len(pods))
	}
	t.Logf("%d writes acknowledged, %d reported failed to the operator (retried)", len(pods)-len(failed), len(failed))
	// The operator retries what failed, as actorletctl's exit code tells
	// them to.
	for _, p := range failed {
		f.eventually("retry "+p.desiredKey(), func() error {
			ctx, cancel := context.WithTimeout(context.Background(), attempt)
			defer cancel()
			_, err := desired.Put(ctx, p.desiredKey(), podJSON(p.name))
			return err
		})
	}
	f.waitRunning(pods)
	f.runsExactlyOnce(pods)

	// The killed server comes back and catches up with the leader.
	f.cl.Start(leader)
	f.cl.WaitMetaLeader()
	for _, stream := range []string{desiredStream, "KV_" + wire.StatusBucket} {
		f.eventually(fmt.Sprintf("%s on %s catches up", stream, f.cl.ServerName(leader)), func() error {
			now := f.cl.WaitStreamLeader(stream)
			want, _ := f.cl.StreamLastSeq(now, stream)
			got, ok := f.cl.StreamLastSeq(leader, stream)
			if !ok || got < want {
				return fmt.Errorf("last sequence %d (replica present: %v), leader %s has %d", got, ok, f.cl.ServerName(now), want)
			}
			return nil
		})
	}
}

// nodeServerKilled: the server a node is connected to dies; the node
// reconnects to another, keeps reporting, and takes new pods.
func (f *fleet) nodeServerKilled(t *testing.T, pods []podRef) []podRef {
	f.t = t
	n := f.nodes[0]
	var srv int
	f.eventually("find the server of "+n.name, func() error {
		if srv = f.cl.ServerOf(n.connName()); srv < 0 {
			return fmt.Errorf("no server has a connection named %s", n.connName())
		}
		return nil
	})
	var before uint64
	f.eventually("read the heartbeat of "+n.name, func() (err error) {
		before, err = f.heartbeatRevision(n.name)
		return err
	})
	f.cl.Stop(srv)
	t.Logf("stopped %s, the server %s is connected to", f.cl.ServerName(srv), n.name)
	f.eventually(n.name+" reconnects to another server", func() error {
		if now := f.cl.ServerOf(n.connName()); now < 0 || now == srv {
			return fmt.Errorf("%s is connected to server %d", n.name, now)
		}
		return nil
	})
	f.eventually(n.name+" keeps reporting its heartbeat", func() error {
		rev, err := f.heartbeatRevision(n.name)
		if err != nil {
			return err
		}
		if rev <= before {
			return fmt.Errorf("heartbeat revision %d, was %d before the server was stopped", rev, before)
		}
		return nil
	})
	extra := podRef{node: n.name, name: "after-node-server-kill"}
	desired := f.kv(wire.DesiredBucket)
	f.eventually("apply "+extra.desiredKey(), func() error {
		ctx, cancel := context.WithTimeout(context.Background(), attempt)
		defer cancel()
		_, err := desired.Put(ctx, extra.desiredKey(), podJSON(extra.name))
		return err
	})
	pods = append(pods, extra)
	f.waitRunning([]podRef{extra})
	f.cl.Start(srv)
	f.cl.WaitMetaLeader()
	f.runsExactlyOnce(pods)
	return pods
}

// quorumLost: two of three servers stop. Writes fail with an error the
// operator sees; nodes keep their pods running; when the servers return,
// writes, new pods and heartbeats resume.
func (f *fleet) quorumLost(t *testing.T, pods []podRef) []podRef {
	f.t = t
	desired := f.kv(wire.DesiredBucket)
	f.cl.Stop(1)
	f.cl.Stop(2)
	t.Logf("stopped %s and %s: no quorum", f.cl.ServerName(1), f.cl.ServerName(2))
	during := podRef{node: f.nodes[1].name, name: "during-quorum-loss"}
	f.eventually("a write without quorum fails", func() error {
		ctx, cancel := context.WithTimeout(context.Background(), 3*time.Second)
		defer cancel()
		_, err := desired.Put(ctx, during.desiredKey(), podJSON(during.name))
		if err == nil {
			// The survivor may still think it leads for a moment.
			return fmt.Errorf("write acknowledged without quorum")
		}
		t.Logf("write without quorum failed as it should: %v", err)
		return nil
	})
	// The operator's tool says so clearly, and fails. (Its own pod: a
	// write that timed out may still be stored, and actorletctl gives the
	// pod a UID of its own, so it must not share a key with the raw writes.)
	viaCtl := podRef{node: f.nodes[1].name, name: "ctl-during-quorum-loss"}
	manifest := filepath.Join(t.TempDir(), "pod.json")
	if err := os.WriteFile(manifest, podJSON(viaCtl.name), 0o644); err != nil {
		t.Fatal(err)
	}
	ctl := func(timeout string) ([]byte, error) {
		cctx, ccancel := context.WithTimeout(context.Background(), waitFor)
		defer ccancel()
		return exec.CommandContext(cctx, ctlBinary, "--server", f.cl.URL(), "--creds", f.cl.AdminCreds(), "--timeout", timeout,
			"apply", "-f", manifest, "--node", viaCtl.node).CombinedOutput()
	}
	out, err := ctl("3s")
	if err == nil || !strings.Contains(string(out), "lost quorum") {
		t.Errorf("actorletctl apply without quorum: err %v, output %q; want a failure saying the cluster may have lost quorum", err, out)
	}
	t.Logf("actorletctl apply without quorum: %v: %s", err, strings.TrimSpace(string(out)))
	// Nodes keep every pod running meanwhile (nothing tells them to stop).
	f.runsExactlyOnce(pods)

	f.cl.Start(1)
	f.cl.Start(2)
	f.cl.WaitMetaLeader()
	before := map[string]uint64{}
	for _, n := range f.nodes {
		f.eventually("read the heartbeat of "+n.name, func() (err error) {
			before[n.name], err = f.heartbeatRevision(n.name)
			return err
		})
	}
	f.eventually("apply "+during.desiredKey()+" after quorum returns", func() error {
		ctx, cancel := context.WithTimeout(context.Background(), attempt)
		defer cancel()
		_, err := desired.Put(ctx, during.desiredKey(), podJSON(during.name))
		return err
	})
	// As actorletctl told them, the operator applies again once the
	// cluster is back.
	f.eventually("actorletctl apply after quorum returns", func() error {
		if out, err := ctl("5s"); err != nil {
			return fmt.Errorf("%v: %s", err, out)
		}
		return nil
	})
	pods = append(pods, during, viaCtl)
	f.waitRunning([]podRef{during, viaCtl})
	for _, n := range f.nodes {
		f.eventually(n.name+" reports its heartbeat again", func() error {
			rev, err := f.heartbeatRevision(n.name)
			if err != nil {
				return err
			}
			if rev <= before[n.name] {
				return fmt.Errorf("heartbeat revision %d, not past %d", rev, before[n.name])
			}
			return nil
		})
	}
	f.waitRunning(pods)
	f.runsExactlyOnce(pods)
	return pods
}
