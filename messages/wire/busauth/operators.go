package busauth

import (
	"fmt"
	"os"
	"path/filepath"
	"strings"

	"github.com/nats-io/jwt/v2"
	utilvalidation "k8s.io/apimachinery/pkg/util/validation"

	"github.com/actorlet/actorlet/messages/wire"
)

// RoleOperator is a person or tool limited to one namespace (or all of
// them), without the admin's right to create buckets, consumers or to
// read other users' replies (OperatorPermissions).
const RoleOperator Role = "operator"

// OperatorsDir holds the public keys issued to each scoped operator (for
// revocation) and, by default, their .creds files.
const OperatorsDir = "operators"

// MaxOperatorName bounds an operator's name (it is one subject token of its
// inbox prefix).
const MaxOperatorName = 63

// OperatorScope is what a scoped operator may touch.
type OperatorScope struct {
	// Namespace limits writes, commands and reads of namespaced data to
	// one namespace; empty means every namespace (still without the
	// admin's rights).
	Namespace string
	// ReadOnly lists and watches but never writes, execs, attaches,
	// restarts or evicts.
	ReadOnly bool
}

// Validate checks the name and the scope, naming the field.
func (s OperatorScope) Validate(name string) error {
	if name == "" || len(name) > MaxOperatorName || !operatorNameOK(name) {
		return fmt.Errorf("operator name %q: must be 1..%d characters of a-z, 0-9 and '-' (it is a subject token)", truncateName(name), MaxOperatorName)
	}
	if s.Namespace != "" {
		if msgs := utilvalidation.IsDNS1123Label(s.Namespace); len(msgs) > 0 {
			return fmt.Errorf("namespace %q: %s", truncateName(s.Namespace), strings.Join(msgs, "; "))
		}
	}
	return nil
}

func operatorNameOK(name string) bool {
	for _, r := range name {
		if !(r >= 'a' && r <= 'z' || r >= '0' && r <= '9' || r == '-') {
			return false
		}
	}
	return true
}

func truncateName(s string) string {
	if len(s) > MaxOperatorName {
		return s[:MaxOperatorName] + "…"
	}
	return s
}

// OperatorInboxPrefix is the inbox prefix of a scoped operator's
// connection: it may subscribe to nothing else, so it never reads the
// replies (session tokens, session output, logs) of another operator.
// actorletctl finds it in the credentials (wire.ClientAuth).
func OperatorInboxPrefix(name string) string { return OperatorInboxPrefixAll + "." + EncodeToken(name) }

// OperatorInboxPrefixAll is the prefix of every scoped operator's inbox.
const OperatorInboxPrefixAll = "_INBOX_OP"

// OperatorPermissions is everything a scoped operator may do. ns is the
// namespace as a subject token, "*" for every namespace. Keys and subjects
// carry the namespace as a token of its own (docs/protocol.md §3):
//
//	desired, ConfigMap, Secret keys  node.<node>.<ns>.<name>, fleet.<ns>.<name>
//	status keys                      <node>.<ns>.<name>
//	events                           actorlet.events.<node>.<ns>.<name>
//	pod commands                     actorlet.node.<node>.ns.<ns>.<verb>
//
// so the server refuses every write outside the namespace; a command's
// body also names the pod's namespace, which the node checks against the
// subject's (commands.Service).
//
// Reads: node records of every node; status and events of the namespace
// through consumers whose filter the create subject pins; desired pods,
// ConfigMaps and Secrets of the namespace by key (direct get) only — a
// consumer there could be an update of a node's own consumer (JetStream
// has no create-only permission), changing what that node reads.
func OperatorPermissions(name string, s OperatorScope) jwt.Permissions {
	ns := "*"
	if s.Namespace != "" {
		ns = EncodeToken(s.Namespace)
	}
	var p jwt.Permissions
	for _, stream := range []string{DesiredStream, StatusStream, NodesStream, wire.EventsStream, ConfigMapsStream, SecretsStream} {
		p.Pub.Allow.Add("$JS.API.STREAM.INFO." + stream)
	}
	for _, b := range []string{wire.DesiredBucket, wire.ConfigMapsBucket, wire.SecretsBucket} {
		stream := wire.BucketStream(b)
		p.Pub.Allow.Add(
			"$JS.API.DIRECT.GET."+stream+".$KV."+b+".node.*."+ns+".*",
			"$JS.API.DIRECT.GET."+stream+".$KV."+b+".fleet."+ns+".*",
		)
		if !s.ReadOnly {
			p.Pub.Allow.Add("$KV."+b+".node.*."+ns+".*", "$KV."+b+".fleet."+ns+".*")
		}
	}
	p.Pub.Allow.Add(
		// Status of the namespace: get pods (-w) is a KV watch, an ordered
		// push consumer whose one filter is in the create subject.
		"$JS.API.DIRECT.GET."+StatusStream+".$KV."+wire.StatusBucket+".*."+ns+".*",
		"$JS.API.CONSUMER.CREATE."+StatusStream+".*.$KV."+wire.StatusBucket+".*."+ns+".*",
		"$JS.FC."+StatusStream+".>",
		// Nodes: every node's record (no node reads through a consumer
		// on this bucket).
		"$JS.API.DIRECT.GET."+NodesStream+".>",
		"$JS.API.CONSUMER.CREATE."+NodesStream+".>",
		"$JS.FC."+NodesStream+".>",
		// Events of the namespace (and the nodes' own): an ordered pull
		// consumer, filter in the create subject.
		"$JS.API.CONSUMER.CREATE."+wire.EventsStream+".*."+wire.EventSubjectPrefix+".*."+ns+".*",
		"$JS.API.CONSUMER.CREATE."+wire.EventsStream+".*."+wire.EventSubjectPrefix+".*._node._node",
		"$JS.API.CONSUMER.MSG.NEXT."+wire.EventsStream+".*",
		"$JS.API.CONSUMER.INFO."+wire.EventsStream+".*",
	)
	pods := wire.CommandSubjectPrefix + ".*." + wire.NamespacedToken + "." + ns
	if s.ReadOnly {
		p.Pub.Allow.Add(pods+".pods.>", pods+"."+wire.VerbLogs)
	} else {
		p.Pub.Allow.Add(pods+".>",
			// Session traffic: each request carries the session's token,
			// which only the opener received (in its own inbox).
			wire.SessionSubject("*", "*", "*"))
	}
	p.Sub.Allow.Add(OperatorInboxPrefix(name) + ".>")
	// Acknowledging log chunks (requests from the node).
	p.Resp = &jwt.ResponsePermission{MaxMsgs: -1, Expires: ResponseWindow}
	return p
}

// IssueOperator signs a new scoped operator, records its public key under
// operators/ (for RevokeOperator) and returns its .creds content.
func (a *Authority) IssueOperator(name string, s OperatorScope) ([]byte, error) {
	if err := s.Validate(name); err != nil {
		return nil, err
	}
	perms := OperatorPermissions(name, s)
	return a.issueRecorded("operator-"+name, &perms, a.operatorKeysPath(name), "operator")
}

// OperatorCredsPath is the default place of an operator's .creds file.
func (a *Authority) OperatorCredsPath(name string) string {
	return filepath.Join(a.Dir, OperatorsDir, EncodeToken(name)+".creds")
}

func (a *Authority) operatorKeysPath(name string) string {
	return filepath.Join(a.Dir, OperatorsDir, EncodeToken(name)+".keys")
}

// RevokeOperator revokes every key issued to the operator, as RevokeNode
// does for a node (the caller pushes the account with PushAccount).
func (a *Authority) RevokeOperator(name string) (int, error) {
	return a.revokeKeys(a.operatorKeysPath(name), "operator", name)
}

// recordKey appends a public key to a keys file (mode 0600, its directory
// 0700).
func recordKey(path, pub string) error {
	if err := os.MkdirAll(filepath.Dir(path), 0o700); err != nil {
		return err
	}
	f, err := os.OpenFile(path, os.O_WRONLY|os.O_CREATE|os.O_APPEND, 0o600)
	if err != nil {
		return err
	}
	_, werr := fmt.Fprintln(f, pub)
	if cerr := f.Close(); werr == nil {
		werr = cerr
	}
	return werr
}
