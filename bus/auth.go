package bus

import (
	"context"
	"crypto/tls"
	"errors"
	"fmt"
	"net"
	"strings"

	"github.com/nats-io/jwt/v2"
	"github.com/nats-io/nats-server/v2/server"
	"github.com/nats-io/nats.go"
	"github.com/nats-io/nats.go/jetstream"
	"k8s.io/klog/v2"
)

// EmbeddedAuth makes the embedded server trust an operator (decentralized
// JWT authentication, see package busauth): only users signed by one of its
// accounts connect, with the permissions their JWT carries.
type EmbeddedAuth struct {
	Operator *jwt.OperatorClaims
	// SystemAccount is the public key of the system account (account JWT
	// updates such as revocations are pushed through it).
	SystemAccount string
	// Accounts maps account public keys to their JWTs (a memory resolver,
	// preloaded).
	Accounts map[string]string
	// Account is the public key of the account nodes and operators use:
	// an edge node's leaf connection carries that account's subjects.
	Account string
}

// ErrEmbeddedNoAuth: the embedded server never runs without authentication.
var ErrEmbeddedNoAuth = errors.New("bus options: the embedded server requires authentication (EmbeddedAuth, user/password or token)")

// applyEmbeddedAuth configures sopts for o's authentication and TLS.
func applyEmbeddedAuth(sopts *server.Options, o Options) error {
	switch {
	case o.EmbeddedAuth != nil:
		a := o.EmbeddedAuth
		res := &server.MemAccResolver{}
		for pub, j := range a.Accounts {
			if err := res.Store(pub, j); err != nil {
				return fmt.Errorf("embedded server: load account %s: %w", pub, err)
			}
		}
		sopts.TrustedOperators = []*jwt.OperatorClaims{a.Operator}
		sopts.SystemAccount = a.SystemAccount
		sopts.AccountResolver = res
	case o.User != "":
		sopts.Username, sopts.Password = o.User, o.Password
	case o.Token != "":
		sopts.Authorization = o.Token
	default:
		return ErrEmbeddedNoAuth
	}
	if o.EmbeddedTLSCert != "" {
		cert, err := tls.LoadX509KeyPair(o.EmbeddedTLSCert, o.EmbeddedTLSKey)
		if err != nil {
			return fmt.Errorf("embedded server TLS: %w", err)
		}
		sopts.TLSConfig = &tls.Config{Certificates: []tls.Certificate{cert}, MinVersion: tls.VersionTLS12}
		sopts.TLS = true
		sopts.TLSTimeout = 2
	} else if !isLoopback(o.EmbeddedHost) {
		klog.InfoS("WARNING: the embedded NATS server listens beyond loopback WITHOUT TLS: credentials and every message cross the network in clear text; give --nats-tls-cert/--nats-tls-key",
			"host", o.EmbeddedHost)
	}
	return nil
}

// localClientURL turns the embedded server's client URL into one this
// process can dial when the server listens on every address (0.0.0.0,
// [::]): loopback, which a certificate for a local node normally names.
func localClientURL(u string) string {
	for _, any := range []string{"://0.0.0.0:", "://[::]:"} {
		if i := strings.Index(u, any); i >= 0 {
			return u[:i] + "://127.0.0.1:" + u[i+len(any):]
		}
	}
	return u
}

// isLoopback says whether host only accepts local connections.
func isLoopback(host string) bool {
	if host == "localhost" {
		return true
	}
	ip := net.ParseIP(host)
	return ip != nil && ip.IsLoopback()
}

// Redial replaces the client connection with one authenticated by
// credsFile (and, when set, using inboxPrefix for its reply subjects). The
// embedded server, if any, keeps running. The agent bootstraps an embedded
// server as its admin, then works as a node: Redial is that switch.
func (c *Conn) Redial(ctx context.Context, credsFile, inboxPrefix string) error {
	o := c.opts
	o.CredsFile, o.InboxPrefix = credsFile, inboxPrefix
	o.User, o.Password, o.Token = "", "", ""
	old := c.NC
	if old != c.edgeNC { // an edge node's reconciler keeps it (Close drains it)
		old.SetClosedHandler(nil)
		if err := old.Drain(); err != nil && !errors.Is(err, nats.ErrConnectionClosed) {
			old.Close()
		}
	}
	c.closed = make(chan struct{})
	nc, err := c.dial(ctx, o)
	if err != nil {
		close(c.closed) // the old connection is gone: Close must not wait for it
		return err
	}
	js, err := jetstream.New(nc)
	if err != nil {
		nc.Close()
		return fmt.Errorf("open JetStream context: %w", err)
	}
	c.NC, c.JS, c.opts = nc, js, o
	klog.InfoS("Connected to NATS with new credentials", "url", nc.ConnectedUrlRedacted(), "inboxPrefix", inboxPrefix)
	return nil
}
