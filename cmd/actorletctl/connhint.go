package main

import (
	"errors"
	"fmt"
	"os"
	"path/filepath"
	"strings"

	"github.com/nats-io/nats.go"

	"github.com/actorlet/actorlet/messages/wire"
)

// identity says who actorletctl connected as and where that came from,
// for the errors of a refused or failed connection.
func (g *globalFlags) identity() string {
	switch {
	case g.credsFrom != "":
		return g.credsFrom
	case g.user != "":
		return fmt.Sprintf("user %q (--user)", g.user)
	case g.token != "" || os.Getenv("ACTORLET_NATS_TOKEN") != "":
		return "a token (--token or ACTORLET_NATS_TOKEN)"
	}
	return "none (" + credsLookup() + "; none was found)"
}

// credsLookup is where credentials are looked for, with the current
// directory the relative path is read from.
func credsLookup() string {
	cwd, _ := os.Getwd()
	var paths []string
	for _, p := range defaultCredsPaths {
		if !filepath.IsAbs(p) {
			p = "./" + p + " (relative to the current directory " + cwd + ")"
		}
		paths = append(paths, p)
	}
	return "looked up in --creds, then $ACTORLET_CREDS, then " + strings.Join(paths, ", then ")
}

// serverFrom says where the server URL came from.
func (g *globalFlags) serverFrom() string {
	switch {
	case g.server == DefaultServer && os.Getenv("ACTORLET_NATS_URL") == "":
		return "the default"
	case os.Getenv("ACTORLET_NATS_URL") == g.server:
		return "from ACTORLET_NATS_URL"
	}
	return "from --server"
}

// connectError explains a failed connection and says what to do next: no
// server answering (is the node running?), or the server refusing the
// credentials (which ones, and where they are looked up).
func (g *globalFlags) connectError(err error) error {
	url := wire.RedactURLs(g.server)
	next := ""
	switch {
	case errors.Is(err, nats.ErrNoServers):
		next = "\n  next: no NATS server answers there: is `make run` (or the node, bin/actorlet) running? " +
			"Start it in another terminal, or point --server (env ACTORLET_NATS_URL) at your bus"
	case errors.Is(err, nats.ErrAuthorization) || strings.Contains(strings.ToLower(err.Error()), "authorization violation"),
		errors.Is(err, nats.ErrAuthExpired), errors.Is(err, nats.ErrAuthRevoked):
		next = "\n  next: the server refused these credentials (credentials are " + credsLookup() + "). " +
			"Run actorletctl from the directory where `make run` runs, or give --creds ROOT_DIR/auth/admin.creds (ROOT_DIR: the node's --root-dir)"
	}
	return fmt.Errorf("connect to NATS at %s: %w\n  server: %s (%s)\n  credentials: %s%s", url, err, url, g.serverFrom(), g.identity(), next)
}
