package wire

import (
	"errors"
	"io"
	"net/url"
	"os"
	"strings"

	"github.com/nats-io/jwt/v2"
	"github.com/nats-io/nats.go"
)

// ClientAuth is how a client (a node or actorletctl) authenticates to the
// bus and verifies it. One of User (with Password), Token or CredsFile
// authenticates; CredsFile may be combined with neither or either of the
// others only as the server allows. TLSCA verifies the server, TLSCert and
// TLSKey are the client certificate for mutual TLS.
type ClientAuth struct {
	User, Password         string
	Token                  string
	CredsFile              string
	TLSCA, TLSCert, TLSKey string
}

// Validate applies the one rule every client of the bus keeps: a token
// excludes a user and password (the server would pick one silently), a
// password needs its user, and a client certificate needs its key. The
// error names the fields as the config file does; callers prefix where the
// fields came from.
func (a ClientAuth) Validate() error {
	switch {
	case a.Token != "" && (a.User != "" || a.Password != ""):
		return errors.New("token and user/password are mutually exclusive")
	case a.Password != "" && a.User == "":
		return errors.New("password given without user")
	case (a.TLSCert == "") != (a.TLSKey == ""):
		return errors.New("tlsCert and tlsKey must be given together")
	}
	return nil
}

// NATSOptions are the nats.go options that carry a (validated) ClientAuth.
func (a ClientAuth) NATSOptions() []nats.Option {
	var opts []nats.Option
	switch {
	case a.User != "":
		opts = append(opts, nats.UserInfo(a.User, a.Password))
	case a.Token != "":
		opts = append(opts, nats.Token(a.Token))
	}
	if a.CredsFile != "" {
		opts = append(opts, nats.UserCredentials(a.CredsFile))
		if p := CredsInboxPrefix(a.CredsFile); p != "" {
			opts = append(opts, nats.CustomInboxPrefix(p))
		}
	}
	if a.TLSCA != "" {
		opts = append(opts, nats.RootCAs(a.TLSCA))
	}
	if a.TLSCert != "" {
		opts = append(opts, nats.ClientCert(a.TLSCert, a.TLSKey))
	}
	return opts
}

// maxCredsBytes bounds the credentials file CredsInboxPrefix reads.
const maxCredsBytes = 64 << 10

// CredsInboxPrefix is the inbox prefix the user of a .creds file must use
// when its permissions allow subscribing only to one inbox prefix
// (_INBOX_OP.<operator>.> for a scoped operator, _INBOX_NODE.<node>.> for a
// node, docs/security.md): replies, session tokens and log chunks reach
// the client only there. It is "" for a user who may subscribe anywhere
// (admin), and for a file it cannot read (the connection then fails on it
// with nats.go's own error).
func CredsInboxPrefix(credsFile string) string {
	f, err := os.Open(credsFile)
	if err != nil {
		return ""
	}
	defer f.Close()
	b, err := io.ReadAll(io.LimitReader(f, maxCredsBytes))
	if err != nil {
		return ""
	}
	tok, err := jwt.ParseDecoratedJWT(b)
	if err != nil {
		return ""
	}
	uc, err := jwt.DecodeUserClaims(tok)
	if err != nil {
		return ""
	}
	prefix := ""
	for _, s := range uc.Permissions.Sub.Allow {
		if strings.HasPrefix(s, "_INBOX") && strings.HasSuffix(s, ".>") {
			if prefix != "" {
				return "" // more than one: let the user choose
			}
			prefix = strings.TrimSuffix(s, ".>")
		}
	}
	return prefix
}

// RedactURLs hides passwords and tokens written into a comma-separated list
// of server URLs, for errors and logs.
func RedactURLs(urls string) string {
	parts := strings.Split(urls, ",")
	for i, p := range parts {
		if u, err := url.Parse(strings.TrimSpace(p)); err == nil && u.User != nil {
			parts[i] = u.Redacted()
		}
	}
	return strings.Join(parts, ",")
}
