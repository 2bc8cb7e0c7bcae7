package agent

import (
	"context"
	"errors"
	"fmt"
	"io/fs"
	"os"
	"path/filepath"
	"time"

	"k8s.io/klog/v2"

	"github.com/actorlet/actorlet/bus"
	"github.com/actorlet/actorlet/messages/wire/busauth"
)

// AuthDir is where an agent running the embedded server keeps its keys and
// the operator credentials actorletctl finds (<root-dir>/auth, mode 0700).
func AuthDir(rootDir string) string { return filepath.Join(rootDir, "auth") }

// AdminCredsPath is the operator credentials file of an embedded server.
func AdminCredsPath(rootDir string) string {
	return filepath.Join(AuthDir(rootDir), busauth.AdminCredsFile)
}

// connectBus connects to the bus and makes sure the node can work there.
//
// Embedded server (no URL, no user/token): the agent is its own operator.
// It keeps an authority under <root-dir>/auth (keys, account JWT), writes
// admin.creds (operator role, for actorletctl) and its node creds, starts
// the server trusting only that authority, provisions the protocol and its
// consumers as admin, and then reconnects with its node credentials: the
// agent itself never runs with more than node permissions.
//
// External server: it connects with what it was given (normally a node's
// .creds from `actorletctl node add`), checks the buckets and its
// consumers, and uses its node inbox prefix.
func (a *Agent) connectBus(ctx context.Context, opts bus.Options) error {
	node := a.cfg.NodeName
	var nodeCreds string
	if opts.URL == "" && opts.User == "" && opts.Token == "" {
		dir := AuthDir(a.cfg.RootDir)
		auth, err := busauth.Init(dir)
		if err != nil {
			return fmt.Errorf("bus authority in %s: %w", dir, err)
		}
		adminCreds := AdminCredsPath(a.cfg.RootDir)
		if err := ensureCreds(adminCreds, func() ([]byte, error) { return auth.IssueAdmin("admin") }); err != nil {
			return err
		}
		if err := ensureCreds(filepath.Join(dir, busauth.SystemCredsFile), func() ([]byte, error) { return auth.IssueSystem("sys") }); err != nil {
			return err
		}
		nodeCreds = auth.NodeCredsPath(node)
		if err := ensureCreds(nodeCreds, func() ([]byte, error) { return auth.IssueNode(node) }); err != nil {
			return err
		}
		oc, err := auth.OperatorClaims()
		if err != nil {
			return err
		}
		jwts, err := auth.AccountJWTs()
		if err != nil {
			return err
		}
		opts.EmbeddedAuth = &bus.EmbeddedAuth{Operator: oc, SystemAccount: auth.SystemAccountPublicKey(), Accounts: jwts, Account: auth.AccountPublicKey()}
		opts.CredsFile = adminCreds
		klog.InfoS("Embedded NATS requires credentials; operator credentials for actorletctl", "creds", adminCreds)
	} else {
		opts.InboxPrefix = busauth.NodeInboxPrefix(node)
	}
	conn, err := bus.Connect(ctx, opts)
	if err != nil {
		return fmt.Errorf("connect to NATS: %w", err)
	}
	a.conn = conn
	a.onShutdown(conn.Close)
	ensureCtx, cancel := context.WithTimeout(ctx, 30*time.Second)
	defer cancel()
	if err := conn.EnsurePodProtocolWith(ensureCtx, a.cfg.NATS.Protocol()); err != nil {
		return fmt.Errorf("create the bus buckets and streams: %w", err)
	}
	if err := busauth.EnsureNodeConsumers(ensureCtx, conn.JS, node); err != nil {
		return err
	}
	// ConfigMaps and Secrets: the embedded server's admin creates their
	// buckets and this node's consumers; on an external server an operator
	// does (actorletctl node add), and a node without them starts anyway,
	// its object store waiting for them.
	// An edge node's object buckets, copies of the hub's, were made with
	// its other buckets (EnsurePodProtocolWith); its consumers on them
	// here as anywhere.
	objCtx, objCancel := context.WithTimeout(ensureCtx, objectSetupTimeout)
	defer objCancel()
	err = nil
	if !conn.Edge() {
		err = conn.EnsureObjectBuckets(objCtx)
	}
	if err == nil {
		err = busauth.EnsureNodeObjectConsumers(objCtx, conn.JS, node)
	}
	if err != nil {
		if nodeCreds != "" {
			return fmt.Errorf("create the ConfigMap and Secret buckets and consumers: %w", err)
		}
		klog.InfoS("ConfigMaps and Secrets are not set up for this node on the bus yet (an operator runs actorletctl node add); starting without them, the object store waits", "node", node, "err", err)
	}
	if nodeCreds != "" {
		if err := conn.Redial(ctx, nodeCreds, busauth.NodeInboxPrefix(node)); err != nil {
			return fmt.Errorf("reconnect to the embedded NATS server as node %q: %w", node, err)
		}
	}
	return nil
}

// objectSetupTimeout bounds the check of the object buckets and consumers
// at start-up, which a node's credentials may not be allowed to complete.
const objectSetupTimeout = 5 * time.Second

// ensureCreds writes a .creds file made by issue unless one is there.
func ensureCreds(path string, issue func() ([]byte, error)) error {
	if _, err := os.Stat(path); err == nil {
		return nil
	} else if !errors.Is(err, fs.ErrNotExist) {
		return err
	}
	creds, err := issue()
	if err != nil {
		return fmt.Errorf("issue %s: %w", path, err)
	}
	return busauth.WriteCreds(path, creds)
}
