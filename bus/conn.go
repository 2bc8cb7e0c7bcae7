package bus

import (
	"context"
	"errors"
	"fmt"
	"math/rand/v2"
	"sync"
	"time"

	"github.com/nats-io/nats-server/v2/server"
	"github.com/nats-io/nats.go"
	"github.com/nats-io/nats.go/jetstream"
	"k8s.io/klog/v2"

	"github.com/actorlet/actorlet/messages/wire"
)

// drainTimeout bounds Close's drain of pending messages.
const drainTimeout = 10 * time.Second

// Conn is the agent's connection to the bus, and the embedded server when
// it runs one. It reconnects forever; components that keep server-side
// state (watchers) can ask to hear about reconnects with OnReconnect.
type Conn struct {
	NC *nats.Conn
	JS jetstream.JetStream

	srv  *server.Server // nil when connected to an external URL
	url  string
	opts Options // with defaults; Redial reuses them
	// edgeNode and hubDomain are set when the embedded server is a leaf
	// node of the fleet's cluster.
	edgeNode, hubDomain string
	// edgeNC and edgeJS are the edge reconciler's connection: the one
	// Connect opened, kept when Redial replaces NC.
	edgeNC         *nats.Conn
	edgeJS         jetstream.JetStream
	reconcilerStop chan struct{} // closed to stop the edge reconciler; nil without one
	reconcilerDone chan struct{} // closed when the edge reconciler ends
	closed         chan struct{}

	mu        sync.Mutex
	listeners map[int]func()
	nextID    int
	closeOnce sync.Once
}

// Connect starts the embedded server when opts.URL is empty, then connects.
func Connect(ctx context.Context, opts Options) (_ *Conn, err error) {
	o, err := opts.withDefaults()
	if err != nil {
		return nil, err
	}
	c := &Conn{url: o.URL, opts: o, closed: make(chan struct{}), listeners: map[int]func(){}}
	if o.URL == "" {
		c.srv, err = startEmbedded(o)
		if err != nil {
			return nil, err
		}
		c.url = localClientURL(c.srv.ClientURL())
		if o.LeafURL != "" {
			c.edgeNode, c.hubDomain = o.EdgeNode, o.HubDomain
		}
		defer func() {
			if err != nil {
				c.srv.Shutdown()
				c.srv.WaitForShutdown()
			}
		}()
		klog.InfoS("Started embedded NATS server", "url", c.url, "storeDir", o.StoreDir)
	}

	nc, err := c.dial(ctx, o)
	if err != nil {
		return nil, err
	}
	c.NC = nc
	c.JS, err = jetstream.New(c.NC)
	if err != nil {
		c.NC.Close()
		return nil, fmt.Errorf("open JetStream context: %w", err)
	}
	klog.InfoS("Connected to NATS", "url", c.NC.ConnectedUrlRedacted(), "embedded", c.srv != nil, "edge", c.Edge())
	c.startEdgeReconciler()
	return c, nil
}

// dial connects to c.url with o's credentials, bounded by ctx.
func (c *Conn) dial(ctx context.Context, o Options) (*nats.Conn, error) {
	nopts := c.natsOptions(o)
	type result struct {
		nc  *nats.Conn
		err error
	}
	done := make(chan result, 1)
	go func() {
		nc, err := nats.Connect(c.url, nopts...)
		done <- result{nc, err}
	}()
	var res result
	select {
	case res = <-done:
	case <-ctx.Done():
		go func() {
			if r := <-done; r.nc != nil {
				r.nc.Close()
			}
		}()
		return nil, fmt.Errorf("connect to NATS at %s: %w", wire.RedactURLs(c.url), ctx.Err())
	}
	if res.err != nil {
		return nil, fmt.Errorf("connect to NATS at %s: %w", wire.RedactURLs(c.url), res.err)
	}
	return res.nc, nil
}

func (c *Conn) natsOptions(o Options) []nats.Option {
	closed := c.closed
	nopts := []nats.Option{
		nats.Name(o.Name),
		nats.MaxReconnects(-1),
		nats.CustomReconnectDelay(reconnectDelay),
		nats.DisconnectErrHandler(func(nc *nats.Conn, err error) {
			if err != nil {
				klog.ErrorS(err, "Disconnected from NATS, reconnecting")
				return
			}
			klog.V(2).InfoS("Disconnected from NATS")
		}),
		nats.ReconnectHandler(func(nc *nats.Conn) {
			klog.InfoS("Reconnected to NATS", "url", nc.ConnectedUrlRedacted())
			c.notifyReconnect()
		}),
		nats.ClosedHandler(func(*nats.Conn) { close(closed) }),
		nats.ErrorHandler(func(_ *nats.Conn, sub *nats.Subscription, err error) {
			subject := ""
			if sub != nil {
				subject = sub.Subject
			}
			klog.ErrorS(err, "NATS asynchronous error", "subject", subject)
		}),
	}
	nopts = append(nopts, o.auth().NATSOptions()...)
	if o.InboxPrefix != "" {
		nopts = append(nopts, nats.CustomInboxPrefix(o.InboxPrefix))
	}
	if o.TLSCA == "" && c.srv != nil && o.EmbeddedTLSCert != "" {
		nopts = append(nopts, nats.RootCAs(o.EmbeddedTLSCert)) // our own server's certificate
	}
	return nopts
}

// reconnectDelay doubles from reconnectBase to reconnectMax per failed
// attempt and adds jitter.
func reconnectDelay(attempts int) time.Duration {
	d := reconnectBase
	for i := 1; i < attempts && d < reconnectMax; i++ {
		d *= 2
	}
	d = min(d, reconnectMax)
	return d + rand.N(reconnectJitter)
}

// ClientURL is the URL clients use to reach the bus: the embedded server's
// client URL, or the configured URL(s).
func (c *Conn) ClientURL() string { return c.url }

// Edge reports whether the embedded server is a leaf node of a hub.
func (c *Conn) Edge() bool { return c.edgeNode != "" }

// LeafConnected reports whether an edge node's uplink to the hub is up.
func (c *Conn) LeafConnected() bool { return c.srv != nil && c.srv.NumLeafNodes() > 0 }

// Embedded reports whether this process runs the server.
func (c *Conn) Embedded() bool { return c.srv != nil }

// Client is what a source of desired state needs of the bus: JetStream, to
// read the node's consumers through, and word of every reconnect, after
// which it reads its state again. Sources take a Client, never the
// connection; *Conn is one.
type Client interface {
	JetStream() jetstream.JetStream
	OnReconnect(f func()) (cancel func())
}

var _ Client = (*Conn)(nil)

// JetStream is the connection's JetStream context.
func (c *Conn) JetStream() jetstream.JetStream { return c.JS }

// OnReconnect registers f to run (on the connection's callback goroutine)
// after every reconnect; the returned function unregisters it.
func (c *Conn) OnReconnect(f func()) (cancel func()) {
	c.mu.Lock()
	defer c.mu.Unlock()
	id := c.nextID
	c.nextID++
	c.listeners[id] = f
	return func() {
		c.mu.Lock()
		defer c.mu.Unlock()
		delete(c.listeners, id)
	}
}

// streamLeaderElected is the subject of JetStream's advisory that a
// stream (of this account) has a new leader.
const streamLeaderElected = "$JS.EVENT.ADVISORY.STREAM.LEADER_ELECTED."

// OnStreamLeaderElected calls f (on a subscription goroutine) each time
// JetStream announces a new leader for stream: a watcher whose consumer
// lived on the old leader's server would otherwise only notice when its
// idle heartbeats stop. A server that does not let this client read
// advisories makes it fail; callers go on without it.
func (c *Conn) OnStreamLeaderElected(stream string, f func()) (cancel func(), err error) {
	sub, err := c.NC.Subscribe(streamLeaderElected+stream, func(*nats.Msg) { f() })
	if err != nil {
		return func() {}, fmt.Errorf("subscribe to leader elections of %s: %w", stream, err)
	}
	return func() { _ = sub.Unsubscribe() }, nil
}

func (c *Conn) notifyReconnect() {
	c.mu.Lock()
	fs := make([]func(), 0, len(c.listeners))
	for _, f := range c.listeners {
		fs = append(fs, f)
	}
	c.mu.Unlock()
	for _, f := range fs {
		f()
	}
}

// Close drains the connection (pending publishes are flushed, subscriptions
// finish what they hold) and then shuts the embedded server down. It is safe
// to call more than once.
func (c *Conn) Close() {
	c.closeOnce.Do(func() {
		c.stopEdgeReconciler()
		if c.edgeNC != nil && c.edgeNC != c.NC {
			c.edgeNC.Close() // the reconciler's, kept by Redial
		}
		if err := c.NC.Drain(); err != nil && !errors.Is(err, nats.ErrConnectionClosed) {
			klog.ErrorS(err, "Draining the NATS connection failed, closing")
			c.NC.Close()
		}
		select {
		case <-c.closed:
		case <-time.After(drainTimeout):
			klog.InfoS("Draining the NATS connection timed out, closing", "timeout", drainTimeout)
			c.NC.Close()
			<-c.closed
		}
		if c.srv != nil {
			c.srv.Shutdown()
			c.srv.WaitForShutdown()
			klog.InfoS("Stopped embedded NATS server")
		}
	})
}
