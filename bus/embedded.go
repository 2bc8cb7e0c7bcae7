package bus

import (
	"fmt"
	"time"

	"github.com/nats-io/nats-server/v2/server"
)

// embeddedReadyTimeout bounds how long Connect waits for the embedded server
// (JetStream recovers its store before it accepts clients).
const embeddedReadyTimeout = 30 * time.Second

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
		sopts.JetStreamDomain = EdgeDomain(o.EdgeNode)
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
	s.SetLoggerV2(serverLogger{}, false, false, false)
	go s.Start()
	if !s.ReadyForConnections(embeddedReadyTimeout) {
		s.Shutdown()
		s.WaitForShutdown()
		return nil, fmt.Errorf("embedded NATS server on %s:%d not ready after %s", o.EmbeddedHost, o.EmbeddedPort, embeddedReadyTimeout)
	}
	if !s.JetStreamEnabled() {
		s.Shutdown()
		s.WaitForShutdown()
		return nil, fmt.Errorf("embedded NATS server: JetStream did not start (storeDir %q)", o.StoreDir)
	}
	return s, nil
}
