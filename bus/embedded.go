package bus

import (
	"fmt"
	"net"
	"strconv"
	"strings"
	"time"

	"github.com/nats-io/nats-server/v2/server"

	"github.com/actorlet/actorlet/messages/wire"
)

// embeddedReadyTimeout bounds how long Connect waits for the embedded server
// (JetStream recovers its store before it accepts clients).
const embeddedReadyTimeout = 30 * time.Second

// readyPoll is how often the start checks for the server's readiness
// while also watching for a fatal error.
const readyPoll = 50 * time.Millisecond

// waitReady waits until s accepts clients, a fatal error is logged (the
// client port taken: known at once, no need to wait the timeout out), or
// embeddedReadyTimeout passes.
func waitReady(s *server.Server, fatal <-chan error) error {
	deadline := time.Now().Add(embeddedReadyTimeout)
	for {
		select {
		case err := <-fatal:
			return err
		default:
		}
		if s.ReadyForConnections(readyPoll) {
			return nil
		}
		if time.Now().After(deadline) {
			return fmt.Errorf("not ready after %s", embeddedReadyTimeout)
		}
	}
}

// leafReconnect is how often an edge node's server retries its uplink.
const leafReconnect = time.Second

// startEmbedded runs a single nats-server in this process: JetStream on,
// client port on the given host only, no cluster, no HTTP monitoring.
func startEmbedded(o Options) (*server.Server, error) {
	sopts := &server.Options{
		ServerName: o.Name,
		Host:       o.EmbeddedHost,
		Port:       o.EmbeddedPort,
		JetStream:  true,
		StoreDir:   o.StoreDir,
		NoSigs:     true,
	}
	if err := applyEmbeddedAuth(sopts, o); err != nil {
		return nil, err
	}
	if o.LeafURL != "" {
		urls, err := parseLeafURLs(o.LeafURL)
		if err != nil {
			return nil, err
		}
		sopts.JetStreamDomain = wire.EdgeDomain(o.EdgeNode)
		sopts.LeafNode.ReconnectInterval = leafReconnect
		sopts.LeafNode.Remotes = []*server.RemoteLeafOpts{{
			URLs:        urls,
			Credentials: o.LeafCreds,
			DenyImports: leafDenied,
			DenyExports: leafDenied,
		}}
		if o.EmbeddedAuth != nil {
			// Operator mode: the uplink carries the account the agent and
			// local operators use (the hub side binds it to the account of
			// LeafCreds).
			sopts.LeafNode.Remotes[0].LocalAccount = o.EmbeddedAuth.Account
		}
	}
	s, err := server.NewServer(sopts)
	if err != nil {
		return nil, fmt.Errorf("create embedded NATS server: %w", err)
	}
	fatal := make(chan error, 1)
	s.SetLoggerV2(serverLogger{fatal: fatal}, false, false, false)
	go s.Start()
	if err := waitReady(s, fatal); err != nil {
		s.Shutdown()
		s.WaitForShutdown()
		addr := net.JoinHostPort(o.EmbeddedHost, strconv.Itoa(o.EmbeddedPort))
		if strings.Contains(err.Error(), "address already in use") {
			return nil, fmt.Errorf("embedded NATS server: %s is already in use (another actorlet or NATS server? "+
				"stop it, or give this node another port with --nats-port, or --nats-port=-1 for a free one): %w", addr, err)
		}
		return nil, fmt.Errorf("embedded NATS server on %s: %w", addr, err)
	}
	if !s.JetStreamEnabled() {
		s.Shutdown()
		s.WaitForShutdown()
		return nil, fmt.Errorf("embedded NATS server: JetStream did not start (storeDir %q)", o.StoreDir)
	}
	return s, nil
}
