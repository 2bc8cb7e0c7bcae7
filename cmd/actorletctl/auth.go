package main

import (
	"context"
	"errors"
	"fmt"
	"io/fs"
	"os"
	"path/filepath"

	"github.com/nats-io/nats.go"

	"github.com/actorlet/actorlet/messages/wire"
	"github.com/actorlet/actorlet/messages/wire/busauth"
)

// Where actorletctl looks for operator credentials when none are given:
// ACTORLET_CREDS, then the auth dir of a node started with `make run` in
// the current directory, then the default root dir's.
var defaultCredsPaths = []string{
	filepath.Join(".actorlet", "auth", busauth.AdminCredsFile),
	filepath.Join("/var/lib/actorlet", "auth", busauth.AdminCredsFile),
}

// findCreds picks the credentials file when --creds, --user and --token are
// not given. A file that exists but cannot be read is an error (another
// user's node: the operator should not silently connect as nobody).
func findCreds(getenv func(string) string) (string, error) {
	if env := getenv("ACTORLET_CREDS"); env != "" {
		return env, nil
	}
	for _, p := range defaultCredsPaths {
		f, err := os.Open(p)
		switch {
		case err == nil:
			f.Close()
			return p, nil
		case errors.Is(err, fs.ErrPermission):
			return "", fmt.Errorf("credentials %s exist but are not readable by you (they belong to the node's user): %w", p, err)
		}
	}
	return "", nil
}

// defaultAuthDir is the authority directory without --auth-dir.
func defaultAuthDir() string {
	if env := os.Getenv("ACTORLET_AUTH_DIR"); env != "" {
		return env
	}
	return filepath.Join(".actorlet", "auth")
}

func (c *cli) auth(ctx context.Context, args []string) error {
	fs := c.flags("auth")
	dir := fs.String("auth-dir", defaultAuthDir(), "authority directory (env ACTORLET_AUTH_DIR); keep it private")
	of := operatorFlags(fs)
	pos, _, err := parse(fs, args)
	if err != nil {
		return err
	}
	switch {
	case len(pos) == 2 && pos[0] == "add-operator":
		return c.addOperator(*dir, pos[1], of)
	case len(pos) == 2 && pos[0] == "revoke-operator":
		return c.revokeOperator(ctx, *dir, pos[1], of)
	case len(pos) != 1 || pos[0] != "init":
		fs.Usage()
		return errUsage
	}
	a, err := busauth.Init(*dir)
	if err != nil {
		return err
	}
	for name, issue := range map[string]func(string) ([]byte, error){
		busauth.AdminCredsFile:  a.IssueAdmin,
		busauth.SystemCredsFile: a.IssueSystem,
	} {
		p := filepath.Join(*dir, name)
		if _, err := os.Stat(p); err == nil {
			continue
		}
		creds, err := issue(name[:len(name)-len(filepath.Ext(name))])
		if err != nil {
			return err
		}
		if err := busauth.WriteCreds(p, creds); err != nil {
			return err
		}
	}
	fmt.Fprintf(c.stdout, "authority in %s\n  server config to include: %s\n  operator credentials:     %s\n  system credentials:       %s\n",
		*dir, filepath.Join(*dir, busauth.ServerConfFile), filepath.Join(*dir, busauth.AdminCredsFile), filepath.Join(*dir, busauth.SystemCredsFile))
	return nil
}

func (c *cli) node(ctx context.Context, args []string) error {
	fs := c.flags("node")
	dir := fs.String("auth-dir", defaultAuthDir(), "authority directory (env ACTORLET_AUTH_DIR)")
	out := fs.String("out", "", "write the node's .creds here (default <auth-dir>/nodes/NAME.creds)")
	sysCreds := fs.String("sys-creds", "", "system account credentials to push the revocation with (default <auth-dir>/sys.creds)")
	edge := fs.Bool("edge", false, "add: an edge node (--nats-leaf-url): the hub's consumers its copies read, and its uplink credentials (--nats-leaf-creds) instead of node credentials")
	hubDomain := fs.String("hub-domain", "hub", "add --edge: the hub's JetStream domain (the edge agent's --nats-hub-domain)")
	pos, _, err := parse(fs, args)
	if err != nil {
		return err
	}
	if len(pos) != 2 || (pos[0] != "add" && pos[0] != "revoke") {
		fs.Usage()
		return errUsage
	}
	a, err := busauth.Open(*dir)
	if err != nil {
		return err
	}
	name := pos[1]
	if pos[0] == "add" && *edge {
		return c.edgeAdd(ctx, a, name, *hubDomain, *out)
	}
	if pos[0] == "add" {
		return c.nodeAdd(ctx, a, name, *out)
	}
	if *sysCreds == "" {
		*sysCreds = filepath.Join(*dir, busauth.SystemCredsFile)
	}
	return c.nodeRevoke(ctx, a, name, *sysCreds)
}

// nodeAdd issues the node's credentials and creates its consumers.
func (c *cli) nodeAdd(ctx context.Context, a *busauth.Authority, name, out string) error {
	cn, err := c.connect(ctx)
	if err != nil {
		return err
	}
	tctx, cancel := context.WithTimeout(ctx, c.g.timeout)
	defer cancel()
	// Each step may wait on the bus (a cluster electing a leader): say
	// which one runs, in apply --wait's style.
	step := func(what string) { fmt.Fprintf(c.stdout, "node/%s: %s\n", name, what) }
	step("creating its consumers of desired pods and commands")
	if err := busauth.EnsureNodeConsumers(tctx, cn.js, name); err != nil {
		return fmt.Errorf("create the consumers of node %q (are the buckets there? actorletctl bootstrap creates them, see docs/security.md): %w", name, err)
	}
	// The ConfigMap and Secret buckets (created if missing, with the
	// desired bucket's replicas and placement), then the node's consumers
	// on them.
	step("creating the ConfigMap and Secret buckets (when missing) and its consumers on them")
	if err := wire.EnsureObjectBuckets(tctx, cn.js); err != nil {
		return fmt.Errorf("create the ConfigMap and Secret buckets: %w", err)
	}
	if err := busauth.EnsureNodeObjectConsumers(tctx, cn.js, name); err != nil {
		return fmt.Errorf("create the ConfigMap and Secret consumers of node %q (are the buckets %s and %s there? see docs/protocol.md): %w",
			name, wire.ConfigMapsBucket, wire.SecretsBucket, err)
	}
	step("issuing its credentials")
	if out, err = issueCreds(out, a.NodeCredsPath(name), func() ([]byte, error) { return a.IssueNode(name) }); err != nil {
		return err
	}
	fmt.Fprintf(c.stdout, "node/%s provisioned: credentials in %s (give them to the node: --nats-creds)\n", name, out)
	return nil
}

// issueCreds issues credentials and writes them to out, or to def when
// out is empty; it returns the path written.
func issueCreds(out, def string, issue func() ([]byte, error)) (string, error) {
	creds, err := issue()
	if err != nil {
		return "", err
	}
	if out == "" {
		out = def
	}
	return out, busauth.WriteCreds(out, creds)
}

// nodeRevoke revokes the node's users in the account JWT and pushes it to
// the servers: the node's connections are closed at once.
func (c *cli) nodeRevoke(ctx context.Context, a *busauth.Authority, name, sysCreds string) error {
	n, err := a.RevokeNode(name)
	if err != nil {
		return err
	}
	if err := c.pushAccount(ctx, a, sysCreds); err != nil {
		return err
	}
	fmt.Fprintf(c.stdout, "node/%s revoked (%d key(s)); its connections are closed\n", name, n)
	return nil
}

// pushAccount sends the authority's account JWT (with its revocations) to
// the servers over the system account.
func (c *cli) pushAccount(ctx context.Context, a *busauth.Authority, sysCreds string) error {
	g := c.g
	g.creds, g.user, g.password, g.token = sysCreds, "", "", ""
	opts, err := g.natsOptions()
	if err != nil {
		return err
	}
	nc, err := nats.Connect(g.server, opts...)
	if err != nil {
		return fmt.Errorf("connect to NATS at %s as the system account (%s): %w; the revocation is stored in %s and applies once pushed or the server reloads its configuration", g.server, sysCreds, err, a.Dir)
	}
	defer nc.Close()
	tctx, cancel := context.WithTimeout(ctx, c.g.timeout)
	defer cancel()
	return a.PushAccount(tctx, nc)
}
