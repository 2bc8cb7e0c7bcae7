package main

import (
	"context"
	"errors"
	"flag"
	"fmt"
	"path/filepath"
	"strings"
	"sync"

	"github.com/nats-io/nats.go"

	"github.com/actorlet/actorlet/messages/wire"
	"github.com/actorlet/actorlet/messages/wire/busauth"
)

// operatorOptions are the flags of auth add-operator and revoke-operator.
type operatorOptions struct {
	namespace, out, sysCreds *string
	readOnly                 *bool
}

func operatorFlags(fs *flag.FlagSet) operatorOptions {
	return operatorOptions{
		namespace: fs.String("namespace", "", "add-operator: the only namespace the operator may write, command and read (default: every namespace, still without the admin's rights)"),
		readOnly:  fs.Bool("read-only", false, "add-operator: list, get, describe, watch and read logs only: never write, exec, attach, port-forward, restart or evict"),
		out:       fs.String("out", "", "add-operator: write the .creds here (default <auth-dir>/operators/NAME.creds)"),
		sysCreds:  fs.String("sys-creds", "", "revoke-operator: system account credentials to push the revocation with (default <auth-dir>/sys.creds)"),
	}
}

// addOperator issues a scoped operator's credentials (docs/security.md,
// "Operator roles"). It needs only the authority directory.
func (c *cli) addOperator(dir, name string, o operatorOptions) error {
	a, err := busauth.Open(dir)
	if err != nil {
		return err
	}
	scope := busauth.OperatorScope{Namespace: *o.namespace, ReadOnly: *o.readOnly}
	out, err := issueCreds(*o.out, a.OperatorCredsPath(name), func() ([]byte, error) { return a.IssueOperator(name, scope) })
	if err != nil {
		return err
	}
	ns, role := *o.namespace, "read-write"
	if ns == "" {
		ns = "every namespace"
	}
	if scope.ReadOnly {
		role = "read-only"
	}
	fmt.Fprintf(c.stdout, "operator/%s (%s, %s): credentials in %s (actorletctl --creds)\n", name, ns, role, out)
	return nil
}

// revokeOperator revokes every key issued to the operator and pushes the
// account to the servers: its connections are closed at once.
func (c *cli) revokeOperator(ctx context.Context, dir, name string, o operatorOptions) error {
	a, err := busauth.Open(dir)
	if err != nil {
		return err
	}
	n, err := a.RevokeOperator(name)
	if err != nil {
		return err
	}
	sys := *o.sysCreds
	if sys == "" {
		sys = filepath.Join(dir, busauth.SystemCredsFile)
	}
	if err := c.pushAccount(ctx, a, sys); err != nil {
		return err
	}
	fmt.Fprintf(c.stdout, "operator/%s revoked (%d key(s)); its connections are closed\n", name, n)
	return nil
}

// refusals remembers the first permission violation the server reported
// on the connection: a refused request gets no answer, only this
// asynchronous error, so the command itself fails with a timeout that
// would otherwise read like an unavailable cluster.
type refusals struct {
	mu    sync.Mutex
	first string
}

// recordRefusal is the connection's nats.ErrorHandler.
func (c *cli) recordRefusal(_ *nats.Conn, _ *nats.Subscription, err error) {
	if !errors.Is(err, nats.ErrPermissionViolation) && !strings.Contains(err.Error(), "Permissions Violation") {
		return
	}
	c.refused.mu.Lock()
	defer c.refused.mu.Unlock()
	if c.refused.first == "" {
		c.refused.first = strings.TrimPrefix(err.Error(), "nats: permissions violation: ")
	}
}

// refusal is the first permission violation seen, or "".
func (c *cli) refusal() string {
	c.refused.mu.Lock()
	defer c.refused.mu.Unlock()
	return c.refused.first
}

// edgeAdd provisions an edge node on the hub: the consumers its copies of
// the desired, ConfigMap and Secret buckets read (their buckets are
// created if missing), and its uplink credentials, pinned to its own
// subjects (docs/fleet.md). The edge's own server needs no credentials
// from here (the agent makes its own authority).
func (c *cli) edgeAdd(ctx context.Context, a *busauth.Authority, name, hubDomain, out string) error {
	cn, err := c.connect(ctx)
	if err != nil {
		return err
	}
	tctx, cancel := context.WithTimeout(ctx, c.g.timeout)
	defer cancel()
	if err := wire.EnsureObjectBuckets(tctx, cn.js); err != nil {
		return fmt.Errorf("create the ConfigMap and Secret buckets: %w", err)
	}
	if err := busauth.EnsureEdgeConsumers(tctx, cn.js, name); err != nil {
		return fmt.Errorf("create the hub's consumers of edge node %q (are the buckets there? actorletctl bootstrap creates them): %w", name, err)
	}
	if out, err = issueCreds(out, a.EdgeUplinkCredsPath(name), func() ([]byte, error) { return a.IssueEdgeUplink(name, hubDomain) }); err != nil {
		return err
	}
	fmt.Fprintf(c.stdout, "edge node/%s provisioned: uplink credentials in %s (give them to the node: --nats-leaf-creds); list it in bootstrap --edge-nodes\n", name, out)
	return nil
}
