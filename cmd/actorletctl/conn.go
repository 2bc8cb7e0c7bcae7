package main

import (
	"context"
	"encoding/json"
	"errors"
	"flag"
	"fmt"
	"os"
	"path/filepath"
	"time"

	"github.com/nats-io/nats.go"
	"github.com/nats-io/nats.go/jetstream"

	"github.com/actorlet/actorlet/messages/wire"
)

// DefaultServer is the NATS URL used without --server or ACTORLET_NATS_URL.
const DefaultServer = "nats://127.0.0.1:4222"

// globalFlags say where the bus is and how to authenticate.
type globalFlags struct {
	initialised                  bool
	server                       string
	user, password, token, creds string
	tlsCA, tlsCert, tlsKey       string
	timeout                      time.Duration
	credsFrom                    string // the credentials file and how it was chosen, set by clientAuth
}

// register adds the global flags to fs, with the values already parsed (or
// the defaults) as defaults, so they may be given before or after the
// command.
func (g *globalFlags) register(fs *flag.FlagSet) {
	if !g.initialised {
		g.initialised = true
		g.server = DefaultServer
		if env := os.Getenv("ACTORLET_NATS_URL"); env != "" {
			g.server = env
		}
		g.timeout = 10 * time.Second
	}
	fs.StringVar(&g.server, "server", g.server, "NATS server URL(s), comma separated (env ACTORLET_NATS_URL)")
	fs.StringVar(&g.user, "user", g.user, "NATS user")
	fs.StringVar(&g.password, "password", g.password, "NATS password (visible in ps: prefer env ACTORLET_NATS_PASSWORD)")
	fs.StringVar(&g.token, "token", g.token, "NATS token (visible in ps: prefer env ACTORLET_NATS_TOKEN)")
	fs.StringVar(&g.creds, "creds", g.creds, "NATS credentials file (.creds); default env ACTORLET_CREDS, else .actorlet/auth/admin.creds or /var/lib/actorlet/auth/admin.creds when present")
	fs.StringVar(&g.tlsCA, "tls-ca", g.tlsCA, "CA certificate to verify the NATS server")
	fs.StringVar(&g.tlsCert, "tls-cert", g.tlsCert, "client certificate for mutual TLS")
	fs.StringVar(&g.tlsKey, "tls-key", g.tlsKey, "client key for mutual TLS")
	fs.DurationVar(&g.timeout, "timeout", g.timeout, "timeout of each request to the bus or a node")
}

// clientAuth is g's authentication, with secrets from the environment
// when not given as flags and, without any credential flag, the operator
// credentials found on disk (findCreds).
func (g *globalFlags) clientAuth() (wire.ClientAuth, error) {
	auth := wire.ClientAuth{User: g.user, Password: g.password, Token: g.token, CredsFile: g.creds,
		TLSCA: g.tlsCA, TLSCert: g.tlsCert, TLSKey: g.tlsKey}
	if g.creds != "" {
		g.credsFrom = fmt.Sprintf("credentials %s (--creds)", g.creds)
	}
	if auth.User != "" && auth.Password == "" {
		auth.Password = os.Getenv("ACTORLET_NATS_PASSWORD")
	}
	if auth.User == "" && auth.Token == "" && auth.CredsFile == "" {
		auth.Token = os.Getenv("ACTORLET_NATS_TOKEN")
	}
	if auth.User == "" && auth.Token == "" && auth.CredsFile == "" {
		creds, err := findCreds(os.Getenv)
		if err != nil {
			return auth, err
		}
		auth.CredsFile = creds
		switch {
		case creds == "":
		case os.Getenv("ACTORLET_CREDS") == creds:
			g.credsFrom = fmt.Sprintf("credentials %s (from ACTORLET_CREDS)", creds)
		default:
			abs, _ := filepath.Abs(creds)
			g.credsFrom = fmt.Sprintf("credentials %s (found in the default places)", abs)
		}
	}
	if err := auth.Validate(); err != nil {
		return auth, fmt.Errorf("bus flags (--user, --password, --token, --tls-cert, --tls-key): %w", err)
	}
	return auth, nil
}

// natsOptions builds the connection options of g.
func (g *globalFlags) natsOptions() ([]nats.Option, error) {
	auth, err := g.clientAuth()
	if err != nil {
		return nil, err
	}
	return append([]nats.Option{nats.Name("actorletctl"), nats.Timeout(g.timeout), nats.NoReconnect()}, auth.NATSOptions()...), nil
}

// conn is the bus as the CLI uses it.
type conn struct {
	nc     *nats.Conn
	js     jetstream.JetStream
	client *wire.Client
}

// connect opens the connection once per invocation.
func (c *cli) connect(ctx context.Context) (*conn, error) {
	if c.conn != nil {
		return c.conn, nil
	}
	g := &c.g
	if g.timeout <= 0 {
		return nil, errors.New("--timeout must be positive")
	}
	opts, err := g.natsOptions()
	if err != nil {
		return nil, err
	}
	opts = append(opts, nats.ErrorHandler(c.recordRefusal))
	nc, err := nats.Connect(g.server, opts...)
	if err != nil {
		return nil, g.connectError(err)
	}
	js, err := jetstream.New(nc)
	if err != nil {
		nc.Close()
		return nil, fmt.Errorf("open JetStream: %w", err)
	}
	c.conn = &conn{nc: nc, js: js, client: &wire.Client{NC: nc, Timeout: g.timeout}}
	return c.conn, nil
}

func (c *cli) close() {
	if c.conn != nil {
		c.conn.nc.Close()
		c.conn = nil
	}
}

// bucket opens one of the protocol's KV buckets.
func (c *cli) bucket(ctx context.Context, name string) (jetstream.KeyValue, error) {
	cn, err := c.connect(ctx)
	if err != nil {
		return nil, err
	}
	ctx, cancel := context.WithTimeout(ctx, c.g.timeout)
	defer cancel()
	kv, err := cn.js.KeyValue(ctx, name)
	if errors.Is(err, jetstream.ErrBucketNotFound) {
		return nil, fmt.Errorf("bucket %s does not exist: is any actorlet node running on this bus?", name)
	}
	if err != nil {
		return nil, unavailable(fmt.Errorf("open bucket %s: %w", name, err), false)
	}
	return kv, nil
}

// unavailable explains an error JetStream gives while a cluster has lost
// its quorum or elects a leader. A write that timed out may still have
// been stored, so the operator is told to check rather than assume.
func unavailable(err error, write bool) error {
	if !wire.IsTransient(err) {
		return err
	}
	hint := "the bus did not answer: the NATS cluster may have lost quorum or be electing a leader; retry when it is back"
	if write {
		hint = "the write was not acknowledged: the NATS cluster may have lost quorum or be electing a leader; " +
			"it may or may not be stored — check with get, or apply again when the cluster is back"
	}
	return fmt.Errorf("%w (%s)", err, hint)
}

// entries returns the current entries of kv matching filter (deletes
// skipped). With watch, the watcher is returned open (the caller stops it)
// to receive the changes that follow.
func entries(ctx context.Context, kv jetstream.KeyValue, filter string, watch bool) ([]jetstream.KeyValueEntry, jetstream.KeyWatcher, error) {
	opts := []jetstream.WatchOpt{}
	if !watch {
		opts = append(opts, jetstream.IgnoreDeletes())
	}
	w, err := kv.Watch(ctx, filter, opts...)
	if err != nil {
		return nil, nil, fmt.Errorf("watch %s %q: %w", kv.Bucket(), filter, err)
	}
	var out []jetstream.KeyValueEntry
	for {
		select {
		case <-ctx.Done():
			stopAside(w)
			return nil, nil, fmt.Errorf("read %s: %w", kv.Bucket(), ctx.Err())
		case e := <-w.Updates():
			if e == nil { // initial values done
				if !watch {
					stopAside(w)
					w = nil
				}
				return out, w, nil
			}
			if e.Operation() == jetstream.KeyValuePut {
				out = append(out, e)
			}
		}
	}
}

// stopAside stops a watcher without waiting: stopping deletes its
// consumer, which an operator scoped to a namespace may not do (the
// server lets the consumer lapse instead), and the refused request would
// hold the command until its timeout.
func stopAside(w jetstream.KeyWatcher) {
	go func() { _ = w.Stop() }()
}

// all reads every entry a bucket holds now.
func (c *cli) all(ctx context.Context, bucket string) ([]jetstream.KeyValueEntry, error) {
	kv, err := c.bucket(ctx, bucket)
	if err != nil {
		return nil, err
	}
	qctx, cancel := context.WithTimeout(ctx, c.g.timeout)
	defer cancel()
	es, _, err := entries(qctx, kv, ">", false)
	return es, err
}

// decodeEntry unmarshals an entry's JSON value into v.
func decodeEntry(e jetstream.KeyValueEntry, v any) error {
	if err := json.Unmarshal(e.Value(), v); err != nil {
		return fmt.Errorf("decode %s key %q: %w", e.Bucket(), e.Key(), err)
	}
	return nil
}

// decodeOrWarn decodes the entry into v; an entry that does not decode is
// reported as a warning (the listing goes on) and false returned.
func (c *cli) decodeOrWarn(e jetstream.KeyValueEntry, v any) bool {
	if err := decodeEntry(e, v); err != nil {
		fmt.Fprintf(c.stderr, "warning: %v\n", err)
		return false
	}
	return true
}

// podNode finds the node running namespace/name from the StatusBucket (keys
// <node>.<ns>.<name>), or the desired pods if it has no status yet.
func (c *cli) podNode(ctx context.Context, namespace, name, node string) (string, error) {
	if node != "" {
		return node, nil
	}
	kv, err := c.bucket(ctx, wire.StatusBucket)
	if err != nil {
		return "", err
	}
	qctx, cancel := context.WithTimeout(ctx, c.g.timeout)
	defer cancel()
	found, _, err := entries(qctx, kv, "*."+wire.EncodeName(namespace)+"."+wire.EncodeName(name), false)
	if err != nil {
		return "", err
	}
	var nodes []string
	for _, e := range found {
		nodes = append(nodes, wire.DecodeName(firstToken(e.Key())))
	}
	switch len(nodes) {
	case 1:
		return nodes[0], nil
	case 0:
		return "", c.notFoundHint(qctx, namespace, name, fmt.Errorf("pod %s/%s not found on any node (no status in %s): check the name and namespace, or give --node", namespace, name, wire.StatusBucket))
	}
	return "", fmt.Errorf("pod %s/%s runs on several nodes (%v): choose one with --node", namespace, name, nodes)
}

func firstToken(key string) string {
	for i := 0; i < len(key); i++ {
		if key[i] == '.' {
			return key[:i]
		}
	}
	return key
}
