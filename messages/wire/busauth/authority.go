package busauth

import (
	"bytes"
	"errors"
	"fmt"
	"io/fs"
	"os"
	"os/user"
	"path/filepath"
	"sort"
	"strings"
	"syscall"
	"time"

	"github.com/nats-io/jwt/v2"
	"github.com/nats-io/nkeys"
)

// Names inside an authority directory.
const (
	operatorSeedFile = "operator.nk"
	accountSeedFile  = "account.nk"
	systemSeedFile   = "system.nk"
	accountJWTFile   = "account.jwt"
	systemJWTFile    = "system.jwt"
	operatorJWTFile  = "operator.jwt"
	// AdminCredsFile is the operator-role user's .creds file in the
	// authority directory.
	AdminCredsFile = "admin.creds"
	// SystemCredsFile is a system-account user, used to push account JWT
	// updates (revocations) to running servers.
	SystemCredsFile = "sys.creds"
	// NodesDir holds each node's .creds file and the public keys issued to
	// it (for revocation).
	NodesDir = "nodes"
	// ServerConfFile is the nats-server configuration fragment (operator,
	// system account, memory resolver with the account JWTs preloaded).
	ServerConfFile = "server.conf"
)

// Account names written into the JWTs.
const (
	AccountName       = "actorlet"
	SystemAccountName = "SYS"
)

// Authority is a directory of keys: the operator, the actorlet account and
// the system account, with the JWTs they sign. Every secret file is 0600 and
// the directory 0700; Open refuses a directory others can read.
type Authority struct {
	Dir string

	operator nkeys.KeyPair
	account  nkeys.KeyPair
	system   nkeys.KeyPair
}

// Init opens dir, creating the keys and JWTs the first time.
func Init(dir string) (*Authority, error) {
	if err := os.MkdirAll(dir, 0o700); err != nil {
		return nil, fmt.Errorf("create auth dir: %w", err)
	}
	if err := checkOwner(dir); err != nil {
		return nil, err
	}
	if err := os.Chmod(dir, 0o700); err != nil {
		return nil, fmt.Errorf("auth dir: %w", err)
	}
	a := &Authority{Dir: dir}
	var err error
	if a.operator, err = a.loadOrCreateKey(operatorSeedFile, nkeys.CreateOperator); err != nil {
		return nil, err
	}
	if a.account, err = a.loadOrCreateKey(accountSeedFile, nkeys.CreateAccount); err != nil {
		return nil, err
	}
	if a.system, err = a.loadOrCreateKey(systemSeedFile, nkeys.CreateAccount); err != nil {
		return nil, err
	}
	if _, err := os.Stat(a.path(accountJWTFile)); errors.Is(err, fs.ErrNotExist) {
		ac, err := a.newAccountClaims()
		if err != nil {
			return nil, err
		}
		if err := a.storeAccount(ac); err != nil {
			return nil, err
		}
	} else if err := a.upgradeAccount(); err != nil {
		return nil, err
	}
	// The operator and system JWTs carry no state: written on every Init.
	oj, err := a.OperatorJWT()
	if err != nil {
		return nil, err
	}
	if err := writeSecret(a.path(operatorJWTFile), []byte(oj)); err != nil {
		return nil, err
	}
	sj, err := a.SystemAccountJWT()
	if err != nil {
		return nil, err
	}
	if err := writeSecret(a.path(systemJWTFile), []byte(sj)); err != nil {
		return nil, err
	}
	if err := a.writeServerConf(); err != nil {
		return nil, err
	}
	return a, nil
}

// Open opens an existing authority directory (without creating anything).
func Open(dir string) (*Authority, error) {
	if _, err := os.Stat(filepath.Join(dir, operatorSeedFile)); err != nil {
		return nil, fmt.Errorf("auth dir %s: %w (create it with `actorletctl auth init --auth-dir %s`)", dir, err, dir)
	}
	return Init(dir)
}

// checkOwner refuses an auth directory that is not a directory owned by
// this process's user: its owner could rename or replace the credentials
// in it whatever their modes (a mode change does not change the owner).
func checkOwner(dir string) error {
	fi, err := os.Lstat(dir)
	if err != nil {
		return fmt.Errorf("auth dir: %w", err)
	}
	if !fi.IsDir() {
		return fmt.Errorf("auth dir %s: not a directory (%v)", dir, fi.Mode().Type())
	}
	st, ok := fi.Sys().(*syscall.Stat_t)
	if !ok {
		return nil
	}
	if uid := int(st.Uid); uid != os.Geteuid() {
		owner := fmt.Sprint(uid)
		if u, err := user.LookupId(owner); err == nil {
			owner = fmt.Sprintf("%s (uid %d)", u.Username, uid)
		}
		return fmt.Errorf("auth dir %s is owned by %s, not by this user (uid %d): refusing it, its owner could replace the keys and credentials in it; use a directory of your own", dir, owner, os.Geteuid())
	}
	return nil
}

func (a *Authority) path(name string) string { return filepath.Join(a.Dir, name) }

func (a *Authority) loadOrCreateKey(name string, create func() (nkeys.KeyPair, error)) (nkeys.KeyPair, error) {
	p := a.path(name)
	seed, err := readSecret(p)
	if err == nil {
		kp, err := nkeys.FromSeed(bytes.TrimSpace(seed))
		if err != nil {
			return nil, fmt.Errorf("read key %s: %w", p, err)
		}
		return kp, nil
	}
	if !errors.Is(err, fs.ErrNotExist) {
		return nil, err
	}
	kp, err := create()
	if err != nil {
		return nil, fmt.Errorf("create key %s: %w", name, err)
	}
	seed, err = kp.Seed()
	if err != nil {
		return nil, err
	}
	if err := writeSecret(p, seed); err != nil {
		return nil, err
	}
	return kp, nil
}

func publicKey(kp nkeys.KeyPair) string {
	pub, err := kp.PublicKey()
	if err != nil { // only on a wiped key pair
		panic(err)
	}
	return pub
}

// OperatorPublicKey, AccountPublicKey and SystemAccountPublicKey identify
// the keys (they appear in server configuration).
func (a *Authority) OperatorPublicKey() string      { return publicKey(a.operator) }
func (a *Authority) AccountPublicKey() string       { return publicKey(a.account) }
func (a *Authority) SystemAccountPublicKey() string { return publicKey(a.system) }

// OperatorJWT is the self-signed operator JWT naming the system account.
func (a *Authority) OperatorJWT() (string, error) {
	oc := jwt.NewOperatorClaims(a.OperatorPublicKey())
	oc.Name = "actorlet"
	oc.SystemAccount = a.SystemAccountPublicKey()
	oc.IssuedAt = 1 // stable: the JWT only changes when the keys change
	return oc.Encode(a.operator)
}

// OperatorClaims decodes OperatorJWT, as nats-server's TrustedOperators wants.
func (a *Authority) OperatorClaims() (*jwt.OperatorClaims, error) {
	oj, err := a.OperatorJWT()
	if err != nil {
		return nil, err
	}
	return jwt.DecodeOperatorClaims(oj)
}

// SystemAccountJWT is the system account's JWT.
func (a *Authority) SystemAccountJWT() (string, error) {
	ac := jwt.NewAccountClaims(a.SystemAccountPublicKey())
	ac.Name = SystemAccountName
	ac.IssuedAt = 1
	return ac.Encode(a.operator)
}

// MaxAccountConsumers is the actorlet account's JetStream consumer limit.
// nats-server 2.15 caps each stream at 1,000 consumers
// (default_max_consumers) unless the stream or the account sets a positive
// limit of its own, and "unlimited" (-1) counts as unset. Every node reads
// through its own durable consumers (one on each of the desired, status,
// ConfigMaps and Secrets streams), so a fleet of more than 1,000 nodes
// needs the account's limit: this one allows 20,000 nodes with room for
// operators' watchers.
const MaxAccountConsumers = 100_000

func (a *Authority) newAccountClaims() (*jwt.AccountClaims, error) {
	ac := jwt.NewAccountClaims(a.AccountPublicKey())
	ac.Name = AccountName
	ac.Limits.JetStreamLimits = jwt.JetStreamLimits{MemoryStorage: -1, DiskStorage: -1, Streams: -1, Consumer: MaxAccountConsumers}
	return ac, nil
}

// upgradeAccount gives an account JWT signed before MaxAccountConsumers
// existed (Consumer -1, so at most 1,000 consumers per stream) that limit,
// keeping everything else (revocations). Running servers learn it on their
// next restart or from PushAccount.
func (a *Authority) upgradeAccount() error {
	aj, err := a.AccountJWT()
	if err != nil {
		return err
	}
	ac, err := jwt.DecodeAccountClaims(aj)
	if err != nil {
		return fmt.Errorf("read account JWT: %w", err)
	}
	if ac.Limits.JetStreamLimits.Consumer > 0 {
		return nil
	}
	ac.Limits.JetStreamLimits.Consumer = MaxAccountConsumers
	return a.storeAccount(ac)
}

// AccountJWT is the actorlet account's current JWT (with its revocations).
func (a *Authority) AccountJWT() (string, error) {
	b, err := readSecret(a.path(accountJWTFile))
	if err != nil {
		return "", err
	}
	return string(bytes.TrimSpace(b)), nil
}

func (a *Authority) storeAccount(ac *jwt.AccountClaims) error {
	ac.IssuedAt = 0 // Encode sets it to now: newer claims replace older ones
	aj, err := ac.Encode(a.operator)
	if err != nil {
		return fmt.Errorf("sign account JWT: %w", err)
	}
	if err := writeSecret(a.path(accountJWTFile), []byte(aj)); err != nil {
		return err
	}
	return a.writeServerConf()
}

// AccountJWTs maps account public keys to their JWTs, as a memory resolver
// is preloaded.
func (a *Authority) AccountJWTs() (map[string]string, error) {
	aj, err := a.AccountJWT()
	if err != nil {
		return nil, err
	}
	sj, err := a.SystemAccountJWT()
	if err != nil {
		return nil, err
	}
	return map[string]string{a.AccountPublicKey(): aj, a.SystemAccountPublicKey(): sj}, nil
}

// ServerConfig is the nats-server configuration fragment that trusts this
// authority: operator JWT, system account and a memory resolver preloaded
// with both accounts. Include it from the server's configuration file.
func (a *Authority) ServerConfig() (string, error) {
	oj, err := a.OperatorJWT()
	if err != nil {
		return "", err
	}
	jwts, err := a.AccountJWTs()
	if err != nil {
		return "", err
	}
	keys := make([]string, 0, len(jwts))
	for k := range jwts {
		keys = append(keys, k)
	}
	sort.Strings(keys)
	var b strings.Builder
	fmt.Fprintf(&b, "# actorlet trust (generated by actorletctl auth; `actorletctl node revoke` rewrites it)\n")
	fmt.Fprintf(&b, "operator: %s\n", oj)
	fmt.Fprintf(&b, "system_account: %s\n", a.SystemAccountPublicKey())
	fmt.Fprintf(&b, "resolver: MEMORY\n")
	fmt.Fprintf(&b, "resolver_preload: {\n")
	for _, k := range keys {
		fmt.Fprintf(&b, "  %s: %s\n", k, jwts[k])
	}
	fmt.Fprintf(&b, "}\n")
	return b.String(), nil
}

func (a *Authority) writeServerConf() error {
	conf, err := a.ServerConfig()
	if err != nil {
		return err
	}
	return writeSecret(a.path(ServerConfFile), []byte(conf))
}

// Role is what a user may do on the bus.
type Role string

const (
	// RoleAdmin may use every subject of the account: operators and
	// provisioning (actorletctl).
	RoleAdmin Role = "admin"
	// RoleNode may use only one node's subjects (NodePermissions).
	RoleNode Role = "node"
)

// IssueAdmin signs a new admin user and returns its .creds content.
func (a *Authority) IssueAdmin(name string) ([]byte, error) {
	creds, _, err := a.issueUser(name, a.account, nil)
	return creds, err
}

// IssueNode signs a new user for node with NodePermissions, records its
// public key under nodes/ (for revocation) and returns its .creds content.
func (a *Authority) IssueNode(node string) ([]byte, error) {
	perms := NodePermissions(node)
	return a.issueRecorded("node-"+node, &perms, a.nodeKeysPath(node), "node")
}

// issueRecorded signs a new user of the account with perms, records its
// public key in keysPath (for revocation) and returns its .creds content;
// what names the key in the error of a failed record.
func (a *Authority) issueRecorded(user string, perms *jwt.Permissions, keysPath, what string) ([]byte, error) {
	creds, pub, err := a.issueUser(user, a.account, perms)
	if err != nil {
		return nil, err
	}
	if err := recordKey(keysPath, pub); err != nil {
		return nil, fmt.Errorf("record %s key: %w", what, err)
	}
	return creds, nil
}

// IssueSystem signs a system-account user (pushes JWT updates).
func (a *Authority) IssueSystem(name string) ([]byte, error) {
	creds, _, err := a.issueUser(name, a.system, nil)
	return creds, err
}

func (a *Authority) issueUser(name string, acct nkeys.KeyPair, perms *jwt.Permissions) ([]byte, string, error) {
	ukp, err := nkeys.CreateUser()
	if err != nil {
		return nil, "", err
	}
	pub := publicKey(ukp)
	uc := jwt.NewUserClaims(pub)
	uc.Name = name
	if perms != nil {
		uc.Permissions = *perms
	}
	uj, err := uc.Encode(acct)
	if err != nil {
		return nil, "", fmt.Errorf("sign user %s: %w", name, err)
	}
	seed, err := ukp.Seed()
	if err != nil {
		return nil, "", err
	}
	creds, err := jwt.FormatUserConfig(uj, seed)
	if err != nil {
		return nil, "", err
	}
	return creds, pub, nil
}

func (a *Authority) nodeKeysPath(node string) string {
	return filepath.Join(a.Dir, NodesDir, EncodeToken(node)+".keys")
}

// NodeCredsPath is where WriteNodeCreds puts a node's .creds file.
func (a *Authority) NodeCredsPath(node string) string {
	return filepath.Join(a.Dir, NodesDir, EncodeToken(node)+".creds")
}

// RevokeNode revokes every user key issued to node (as of now) in the
// account JWT and stores it. The caller pushes the new JWT to the servers
// (PushAccount); until then running servers still accept the node.
func (a *Authority) RevokeNode(node string) (revoked int, err error) {
	return a.revokeKeys(a.nodeKeysPath(node), "node", node)
}

// revokeKeys revokes every key listed in the keys file of a node or
// operator (what, name) as of now, and stores the account JWT.
func (a *Authority) revokeKeys(keysPath, what, name string) (revoked int, err error) {
	b, err := readSecret(keysPath)
	if errors.Is(err, fs.ErrNotExist) {
		return 0, fmt.Errorf("%s %q: no credentials were issued from %s", what, name, a.Dir)
	}
	if err != nil {
		return 0, err
	}
	aj, err := a.AccountJWT()
	if err != nil {
		return 0, err
	}
	ac, err := jwt.DecodeAccountClaims(aj)
	if err != nil {
		return 0, fmt.Errorf("decode account JWT: %w", err)
	}
	now := time.Now()
	for _, pub := range strings.Fields(string(b)) {
		ac.RevokeAt(pub, now)
		revoked++
	}
	if err := a.storeAccount(ac); err != nil {
		return 0, err
	}
	return revoked, nil
}

// WriteCreds writes a .creds file with mode 0600, creating its directory
// with mode 0700.
func WriteCreds(path string, creds []byte) error {
	if err := os.MkdirAll(filepath.Dir(path), 0o700); err != nil {
		return fmt.Errorf("create creds dir: %w", err)
	}
	return writeSecret(path, creds)
}

// writeSecret writes data to path with mode 0600, atomically.
func writeSecret(path string, data []byte) error {
	tmp, err := os.CreateTemp(filepath.Dir(path), "."+filepath.Base(path)+".*")
	if err != nil {
		return fmt.Errorf("write %s: %w", path, err)
	}
	defer os.Remove(tmp.Name())
	if err := tmp.Chmod(0o600); err != nil {
		tmp.Close()
		return fmt.Errorf("write %s: %w", path, err)
	}
	if _, err := tmp.Write(data); err != nil {
		tmp.Close()
		return fmt.Errorf("write %s: %w", path, err)
	}
	if err := tmp.Close(); err != nil {
		return fmt.Errorf("write %s: %w", path, err)
	}
	if err := os.Rename(tmp.Name(), path); err != nil {
		return fmt.Errorf("write %s: %w", path, err)
	}
	return nil
}

// maxSecretBytes bounds every key, JWT or creds file read.
const maxSecretBytes = 1 << 20

func readSecret(path string) ([]byte, error) {
	f, err := os.Open(path)
	if err != nil {
		return nil, err
	}
	defer f.Close()
	st, err := f.Stat()
	if err != nil {
		return nil, err
	}
	if st.Size() > maxSecretBytes {
		return nil, fmt.Errorf("%s: %d bytes, more than the %d allowed", path, st.Size(), maxSecretBytes)
	}
	if st.Mode().Perm()&0o077 != 0 {
		return nil, fmt.Errorf("%s: mode %v lets other users read it; want 0600", path, st.Mode().Perm())
	}
	b := make([]byte, st.Size())
	if _, err := f.ReadAt(b, 0); err != nil && st.Size() > 0 {
		return nil, fmt.Errorf("read %s: %w", path, err)
	}
	return b, nil
}
