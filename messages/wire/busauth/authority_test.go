package busauth_test

import (
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/nats-io/jwt/v2"

	"github.com/actorlet/actorlet/messages/wire/busauth"
	"github.com/actorlet/actorlet/test/testutil"
)

func TestInitIsStableAndPrivate(t *testing.T) {
	dir := filepath.Join(t.TempDir(), "auth")
	a, err := busauth.Init(dir)
	if err != nil {
		t.Fatal(err)
	}
	aj, _ := a.AccountJWT()
	b, err := busauth.Init(dir)
	if err != nil {
		t.Fatal(err)
	}
	bj, _ := b.AccountJWT()
	if a.OperatorPublicKey() != b.OperatorPublicKey() || a.AccountPublicKey() != b.AccountPublicKey() || aj != bj {
		t.Fatal("a second Init changed the keys or the account JWT")
	}
	entries, err := os.ReadDir(dir)
	if err != nil {
		t.Fatal(err)
	}
	for _, e := range entries {
		st, _ := os.Stat(filepath.Join(dir, e.Name()))
		if st.Mode().Perm()&0o077 != 0 {
			t.Errorf("%s has mode %v", e.Name(), st.Mode().Perm())
		}
	}
	// A key file others can read is refused, not used.
	if err := os.Chmod(filepath.Join(dir, "operator.nk"), 0o644); err != nil {
		t.Fatal(err)
	}
	if _, err := busauth.Init(dir); err == nil || !strings.Contains(err.Error(), "lets other users read it") {
		t.Fatalf("Init with a world-readable key: %v", err)
	}
	// Open does not create an authority.
	if _, err := busauth.Open(filepath.Join(t.TempDir(), "none")); err == nil {
		t.Fatal("Open created an authority")
	}
}

func TestNodeCredsCarryNodePermissions(t *testing.T) {
	a, err := busauth.Init(filepath.Join(t.TempDir(), "auth"))
	if err != nil {
		t.Fatal(err)
	}
	creds, err := a.IssueNode("n1.example.com")
	if err != nil {
		t.Fatal(err)
	}
	uj, err := jwt.ParseDecoratedJWT(creds)
	if err != nil {
		t.Fatal(err)
	}
	uc, err := jwt.DecodeUserClaims(uj)
	if err != nil {
		t.Fatal(err)
	}
	if uc.Issuer != a.AccountPublicKey() {
		t.Errorf("issuer %s, want the account", uc.Issuer)
	}
	for _, s := range uc.Pub.Allow {
		if strings.Contains(s, "CONSUMER.CREATE") || strings.Contains(s, "CONSUMER.DURABLE") || strings.Contains(s, "STREAM.MSG.GET") ||
			(strings.Contains(s, "n1_example_com") == false && !strings.HasPrefix(s, "$JS.API.STREAM.INFO.")) {
			t.Errorf("node may publish to %q", s)
		}
	}
	for _, s := range uc.Sub.Allow {
		if s == ">" || strings.HasPrefix(s, "_INBOX.") || (!strings.Contains(s, "n1_example_com") && !strings.HasPrefix(s, "$SRV.")) {
			t.Errorf("node may subscribe to %q", s)
		}
	}
	if uc.Resp == nil || uc.Resp.MaxMsgs != -1 || uc.Resp.Expires != busauth.ResponseWindow {
		t.Errorf("response permission %+v", uc.Resp)
	}
}

// An auth directory another user owns is refused with an error naming its
// owner (before, Init changed its mode but not its owner, and the owner
// could rename the admin credentials).
func TestInitRefusesADirectoryOwnedByAnotherUser(t *testing.T) {
	other := testutil.OtherUser(t)
	dir := filepath.Join(t.TempDir(), "auth")
	if err := os.Mkdir(dir, 0o700); err != nil {
		t.Fatal(err)
	}
	if err := os.Chown(dir, int(other.Uid), int(other.Gid)); err != nil {
		t.Fatal(err)
	}
	_, err := busauth.Init(dir)
	if err == nil || !strings.Contains(err.Error(), "is owned by") || !strings.Contains(err.Error(), "uid 65534") {
		t.Fatalf("Init on a directory owned by uid 65534: %v, want an error naming the owner", err)
	}
	if entries, _ := os.ReadDir(dir); len(entries) != 0 {
		t.Errorf("Init wrote %v into it", entries)
	}
}
