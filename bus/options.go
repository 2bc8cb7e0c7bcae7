package bus

import (
	"errors"
	"fmt"
	"strings"
	"time"

	"github.com/actorlet/actorlet/messages/wire"
)

// Defaults of Options.
const (
	DefaultEmbeddedHost = "127.0.0.1"
	DefaultEmbeddedPort = 4222
	DefaultName         = "actorlet"
)

// Reconnect back-off: the delay doubles from reconnectBase up to
// reconnectMax, with up to reconnectJitter added so a fleet of nodes does not
// reconnect in lock step after a server restart.
const (
	reconnectBase   = 250 * time.Millisecond
	reconnectMax    = 10 * time.Second
	reconnectJitter = 500 * time.Millisecond
)

// Options says where the bus is and how to authenticate.
type Options struct {
	// URL lists the NATS servers ("nats://a:4222,nats://b:4222"). Empty
	// starts an embedded server, for a single node or a demo.
	URL string
	// User and Password, or Token, or CredsFile (a .creds file with a user
	// JWT and NKey seed) authenticate the client. With an embedded server,
	// User/Password or Token are also required of every client of it.
	User, Password string
	Token          string
	CredsFile      string
	// TLSCA verifies the server; TLSCert/TLSKey are the client certificate
	// for mutual TLS (TLSCert/TLSKey only with URL).
	TLSCA, TLSCert, TLSKey string
	// InboxPrefix replaces _INBOX for this connection's reply subjects (a
	// node uses its own, the only inboxes it may subscribe to).
	InboxPrefix string

	// EmbeddedAuth makes the embedded server trust an operator's JWTs; the
	// client then authenticates with CredsFile. Without it the embedded
	// server requires User/Password or Token; it never runs without auth.
	EmbeddedAuth *EmbeddedAuth
	// EmbeddedTLSCert and EmbeddedTLSKey serve TLS on the embedded server's
	// client port (required in spirit whenever EmbeddedHost is not
	// loopback: a loud warning is logged otherwise).
	EmbeddedTLSCert, EmbeddedTLSKey string

	// EmbeddedHost is the address the embedded server's client port binds
	// (default 127.0.0.1: the bus is not exposed unless asked).
	EmbeddedHost string
	// EmbeddedPort is the embedded server's client port (0 means 4222, -1 a
	// random free port).
	EmbeddedPort int
	// StoreDir is the embedded server's JetStream directory, normally under
	// the agent's root dir. Required when URL is empty.
	StoreDir string

	// LeafURL, with the embedded server, makes it a leaf node of the
	// fleet's cluster ("nats-leaf://hub-1:7422,nats-leaf://hub-2:7422"):
	// an edge node (see leaf.go). LeafCreds authenticates the uplink.
	LeafURL, LeafCreds string
	// EdgeNode is the node's name, required with LeafURL: its JetStream
	// domain is EdgeDomain(EdgeNode) and its desired bucket sources only
	// its own keys from the hub.
	EdgeNode string
	// HubDomain is the fleet cluster's JetStream domain (default "hub").
	HubDomain string

	// Name identifies this connection to the server (monitoring, logs).
	Name string
}

// withDefaults returns a copy of o with defaults filled in, or an error
// naming the field that is wrong.
func (o Options) withDefaults() (Options, error) {
	if o.Name == "" {
		o.Name = DefaultName
	}
	if err := o.auth().Validate(); err != nil {
		return o, fmt.Errorf("bus options: %w", err)
	}
	if o.URL != "" {
		if o.LeafURL != "" {
			return o, errors.New("bus options: leafURL applies to the embedded server (leave url empty)")
		}
		return o, nil
	}
	if o.LeafURL != "" {
		if o.EdgeNode == "" {
			return o, errors.New("bus options: edgeNode is required with leafURL")
		}
		if _, err := parseLeafURLs(o.LeafURL); err != nil {
			return o, fmt.Errorf("bus options: %w", err)
		}
		if o.HubDomain == "" {
			o.HubDomain = DefaultHubDomain
		}
		if strings.ContainsAny(o.HubDomain, ". *>") || len(o.HubDomain) > 64 {
			return o, fmt.Errorf("bus options: hubDomain %q: one token of at most 64 bytes", o.HubDomain)
		}
	}
	if o.EmbeddedHost == "" {
		o.EmbeddedHost = DefaultEmbeddedHost
	}
	switch {
	case o.EmbeddedPort == 0:
		o.EmbeddedPort = DefaultEmbeddedPort
	case o.EmbeddedPort < -1 || o.EmbeddedPort > 65535:
		return o, fmt.Errorf("bus options: embeddedPort %d is not a port (-1 means random)", o.EmbeddedPort)
	}
	if o.StoreDir == "" {
		return o, errors.New("bus options: storeDir is required for the embedded server")
	}
	if o.TLSCert != "" {
		return o, errors.New("bus options: tlsCert applies to an external server (set url); the embedded server's certificate is embeddedTLSCert")
	}
	if (o.EmbeddedTLSCert == "") != (o.EmbeddedTLSKey == "") {
		return o, errors.New("bus options: embeddedTLSCert and embeddedTLSKey must be given together")
	}
	if o.EmbeddedAuth == nil && o.User == "" && o.Token == "" {
		return o, ErrEmbeddedNoAuth
	}
	if o.EmbeddedAuth != nil && o.CredsFile == "" {
		return o, errors.New("bus options: embeddedAuth needs a credsFile to connect with")
	}
	return o, nil
}

// auth is the part of o every bus client shares with actorletctl.
func (o Options) auth() wire.ClientAuth {
	return wire.ClientAuth{User: o.User, Password: o.Password, Token: o.Token, CredsFile: o.CredsFile,
		TLSCA: o.TLSCA, TLSCert: o.TLSCert, TLSKey: o.TLSKey}
}
