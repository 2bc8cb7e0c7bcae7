package agent

import (
	"context"
	"sync"
	"time"

	"k8s.io/klog/v2"

	"github.com/actorlet/actorlet/actors/actorutil"
	"github.com/actorlet/actorlet/messages"
	"github.com/actorlet/actorlet/node/shutdown"
)

// shutdownReplyMargin is how long past the groups' grace periods the agent
// waits for the sync loop's NodeShutdownDone before it lets the system go.
const shutdownReplyMargin = 30 * time.Second

// flushTimeout bounds publishing the final statuses before the lock goes.
const flushTimeout = 5 * time.Second

// Reconnection to the system bus after it went away (a restarted
// dbus-daemon): the first try after reconnectMin, doubling up to
// reconnectMax, as the kubelet restarts its watch.
const (
	reconnectMin = time.Second
	reconnectMax = 30 * time.Second
)

// startGracefulShutdown takes logind's delay inhibitor lock when a
// shutdown grace period is set, and watches for PrepareForShutdown.
// Without logind it says once why and the agent runs as without the
// setting.
func (a *Agent) startGracefulShutdown() {
	groups := a.cfg.shutdownGroups()
	if len(groups) == 0 {
		klog.V(2).InfoS("Graceful node shutdown off (--shutdown-grace-period is 0)")
		return
	}
	var total time.Duration
	for _, g := range groups {
		total += time.Duration(g.GracePeriodSeconds) * time.Second
	}
	open := func() (*shutdown.Inhibitor, error) {
		return shutdown.Open(shutdown.Config{BusAddress: a.cfg.SystemBusAddress, Who: "actorlet",
			Why: "actorlet terminates the node's pods gracefully before a shutdown"})
	}
	inh, err := open()
	if err != nil {
		klog.InfoS("Pods get no grace period on a system shutdown", "reason", err.Error())
		return
	}
	if delayMax := inh.InhibitDelayMax(); delayMax < total {
		klog.ErrorS(nil, "The logind InhibitDelayMaxSec is shorter than the shutdown grace period: the system goes down after it, whatever the pods' state",
			"inhibitDelayMax", delayMax, "shutdownGracePeriod", total,
			"fix", "set InhibitDelayMaxSec to at least the grace period under [Login] in /etc/systemd/logind.conf.d/99-actorlet.conf, then reload systemd-logind")
	}
	klog.InfoS("Graceful node shutdown enabled: holding a logind delay inhibitor lock", "shutdownGracePeriod", total,
		"groups", groups, "inhibitDelayMax", inh.InhibitDelayMax())
	w := &shutdownWatch{a: a, open: open, groups: groups, total: total, cur: inh, stop: make(chan struct{}), done: make(chan struct{})}
	a.onShutdown(w.close)
	go w.run()
}

// shutdownWatch follows logind through the life of the agent, connecting
// again when the system bus goes away.
type shutdownWatch struct {
	a      *Agent
	open   func() (*shutdown.Inhibitor, error)
	groups []messages.ShutdownGroup
	total  time.Duration

	mu      sync.Mutex
	cur     *shutdown.Inhibitor // the connection in use
	stopped bool
	stop    chan struct{} // closed by close
	done    chan struct{} // closed when run returns
}

// close ends the watch: the lock is released (the agent stops; a system
// shutdown without it gives the pods no grace period).
func (w *shutdownWatch) close() {
	w.mu.Lock()
	w.stopped = true
	close(w.stop)
	cur := w.cur
	w.mu.Unlock()
	cur.Close()
	<-w.done
}

func (w *shutdownWatch) run() {
	defer close(w.done)
	for {
		w.mu.Lock()
		inh := w.cur
		w.mu.Unlock()
		w.follow(inh)
		if !w.reconnect() {
			return
		}
	}
}

// follow handles inh's PrepareForShutdown events until its connection ends.
func (w *shutdownWatch) follow(inh *shutdown.Inhibitor) {
	a := w.a
	for active := range inh.Events() {
		if active {
			if a.shuttingDown.CompareAndSwap(false, true) {
				go a.runNodeShutdown(inh, w.groups, w.total)
			}
			continue
		}
		klog.InfoS("System shutdown canceled")
		a.shuttingDown.Store(false)
		a.system.Root.Send(a.actors.Supervisor, &messages.CancelNodeShutdown{})
		if err := inh.Acquire(); err != nil {
			klog.ErrorS(err, "Cannot take the logind inhibitor lock again after a canceled shutdown")
		}
		a.beat()
	}
}

// reconnect opens a new connection after the last one ended, backing off;
// false once the watch is closed.
func (w *shutdownWatch) reconnect() bool {
	select {
	case <-w.stop:
		return false
	default:
	}
	klog.ErrorS(nil, "Lost the system bus: a system shutdown cannot be seen until it is back; reconnecting")
	backoff := reconnectMin
	for {
		select {
		case <-w.stop:
			return false
		case <-time.After(backoff):
		}
		inh, err := w.open()
		if err != nil {
			klog.V(2).InfoS("Cannot reach logind yet", "reason", err.Error(), "retryIn", backoff)
			backoff = min(2*backoff, reconnectMax)
			continue
		}
		w.mu.Lock()
		if w.stopped {
			w.mu.Unlock()
			inh.Close()
			return false
		}
		old := w.cur
		w.cur = inh
		w.mu.Unlock()
		// The old lock may still hold logind (only the bus went away): let
		// it go now that the new one is held.
		old.Close()
		klog.InfoS("Back on the system bus: holding a logind delay inhibitor lock again")
		return true
	}
}

// runNodeShutdown has the sync loop terminate the pods by priority, puts
// their final statuses on the bus, releases the lock, and ends the agent.
func (a *Agent) runNodeShutdown(inh *shutdown.Inhibitor, groups []messages.ShutdownGroup, total time.Duration) {
	klog.InfoS("System shutdown: terminating pods by priority", "node", a.cfg.NodeName, "shutdownGracePeriod", total)
	fut := a.system.Root.RequestFuture(a.actors.Supervisor, &messages.StartNodeShutdown{Groups: groups}, total+shutdownReplyMargin)
	a.beat() // Ready false: node is shutting down
	res, err := fut.Result()
	done, _ := res.(*messages.NodeShutdownDone)
	switch {
	case err != nil || done == nil:
		klog.ErrorS(err, "The sync loop did not report the pods terminated; letting the system shut down")
	case done.Canceled:
		return // follow took it back
	default:
		klog.InfoS("Pods terminated for the system shutdown", "terminated", done.Terminated, "stillTerminating", done.Remaining)
	}
	ctx, cancel := context.WithTimeout(context.Background(), flushTimeout)
	defer cancel()
	// The status actor handles messages in order: once it answers, the
	// final statuses it was sent are with the publisher.
	if _, err := actorutil.Ask[*messages.PodStatusList](ctx, a.system.Root, a.actors.Status, &messages.ListPodStatuses{}); err != nil {
		klog.ErrorS(err, "Cannot reach the status actor before the shutdown")
	}
	if err := a.statuses.Flush(ctx); err != nil {
		klog.ErrorS(err, "Not every final pod status is on the bus before the shutdown")
	}
	if err := inh.Release(); err != nil {
		klog.ErrorS(err, "Closing the logind inhibitor lock")
	}
	klog.InfoS("Inhibitor lock released; the agent exits", "node", a.cfg.NodeName)
	a.shutDownOnce.Do(func() { close(a.shutDown) })
}

// beat refreshes the node entry now, so the shutdown shows at once.
func (a *Agent) beat() {
	if a.heartbeat == nil {
		return
	}
	ctx, cancel := context.WithTimeout(context.Background(), 5*time.Second)
	defer cancel()
	if err := a.heartbeat.Beat(ctx); err != nil {
		klog.ErrorS(err, "Node heartbeat after a shutdown change failed")
	}
}

// ShutDown is closed once the agent finished a graceful node shutdown: its
// pods are terminated, their statuses published and logind's lock
// released. Run returns then.
func (a *Agent) ShutDown() <-chan struct{} { return a.shutDown }
