package commands

import (
	"context"
	"encoding/json"
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/nats-io/nats.go"
	"github.com/nats-io/nats.go/jetstream"
	v1 "k8s.io/api/core/v1"
	"k8s.io/apimachinery/pkg/types"

	"github.com/actorlet/actorlet/bus/bustest"
	"github.com/actorlet/actorlet/messages/wire"
	"github.com/actorlet/actorlet/messages/wire/busauth"
	"github.com/actorlet/actorlet/node/commands/commandstest"
	"github.com/actorlet/actorlet/test/testutil"
)

// refuseWait bounds a request the server refuses: it never answers one;
// the refusal is checked through the violation it reports.
const refuseWait = 300 * time.Millisecond

// secureNode runs node n1's command service on a server configured as
// docs/security.md says, with n1's own credentials, serving pods.
func secureNode(t *testing.T, pods ...string) (*bustest.Server, *Service, *commandstest.HostStreams) {
	t.Helper()
	srv := bustest.StartServer(t, bustest.ServerOptions{Secure: true})
	bustest.ConnectWithProtocol(t, srv)
	n1 := bustest.ConnectNode(t, srv, "n1")
	host := commandstest.StartHostStreams(t)
	node := &streamNode{fakeNode: &fakeNode{exec: func(cmd []string, _ time.Duration) ([]byte, []byte, int, error) {
		return []byte(strings.Join(cmd, " ")), nil, 0, nil
	}}, rt: host.Runtime()}
	var ps []*v1.Pod
	node.logs = map[string]string{}
	for i, ref := range pods {
		ns, name, _ := strings.Cut(ref, "/")
		p := streamPod()
		p.Namespace, p.Name, p.UID = ns, name, types.UID("u"+string(rune('0'+i)))
		ps = append(ps, p)
		log := filepath.Join(t.TempDir(), "0.log")
		if err := os.WriteFile(log, []byte("2024-01-02T03:04:05Z stdout F hello from "+ref+"\n"), 0o600); err != nil {
			t.Fatal(err)
		}
		node.logs[ref+"/app"] = log
	}
	node.setPods(ps...)
	svc := startService(t, n1.NC, node, ServiceOptions{NodeName: "n1", Sessions: SessionOptions{Poll: 200 * time.Millisecond}})
	t.Cleanup(func() {
		testutil.Until(t, 10*time.Second, "processes left running", func() bool { return host.Processes() == 0 })
	})
	return srv, svc, host
}

// operatorConn connects with a scoped operator's credentials the way
// actorletctl does (wire.ClientAuth: the inbox prefix comes from them).
func operatorConn(t *testing.T, srv *bustest.Server, name string, scope busauth.OperatorScope) (*nats.Conn, *bustest.Violations) {
	t.Helper()
	creds := srv.OperatorCreds(t, name, scope)
	v := &bustest.Violations{}
	opts := append(wire.ClientAuth{CredsFile: creds}.NATSOptions(), nats.ErrorHandler(v.Handler))
	nc, err := bustest.Dial(t, srv, opts...)
	if err != nil {
		t.Fatalf("connect as operator %s: %v", name, err)
	}
	if want := busauth.OperatorInboxPrefix(name) + "."; !strings.HasPrefix(nc.NewInbox(), want) {
		t.Fatalf("operator %s's inbox %q, want under %s (taken from the credentials)", name, nc.NewInbox(), want)
	}
	return nc, v
}

// TestSessionBoundToOpener: operator B, allowed to exec in the same
// namespace, learns A's session ID and tries to write to it, read it and
// close it — with its own reply subjects, with reply subjects spoofed into
// A's inbox, and after A opened with a short (two-token) reply subject. It
// never gets in: each request must carry the token only A received.
func TestSessionBoundToOpener(t *testing.T) {
	srv, svc, _ := secureNode(t, "team-a/web")
	ctx := context.Background()
	scope := busauth.OperatorScope{Namespace: "team-a"}
	aliceNC, _ := operatorConn(t, srv, "alice", scope)
	bobNC, bobV := operatorConn(t, srv, "bob", scope)

	// A opens through a reply subject of two tokens below its prefix: the
	// owner inbox the node derives is then the bare prefix, which B can
	// name too.
	short := busauth.OperatorInboxPrefix("alice") + ".open"
	replies := make(chan *nats.Msg, 1)
	sub, err := aliceNC.ChanSubscribe(short, replies)
	if err != nil {
		t.Fatal(err)
	}
	defer sub.Unsubscribe()
	body, _ := json.Marshal(wire.SessionRequest{Namespace: "team-a", Name: "web", Command: []string{"cat"}, Stdin: true})
	if err := aliceNC.PublishRequest(wire.NamespacedCommandSubject("n1", "team-a", wire.VerbStreamExec), short, body); err != nil {
		t.Fatal(err)
	}
	var resp wire.SessionResponse
	select {
	case m := <-replies:
		if err := json.Unmarshal(m.Data, &resp); err != nil || resp.Token == "" {
			t.Fatalf("open answer %q: %v", m.Data, err)
		}
	case <-time.After(10 * time.Second):
		t.Fatal("no answer to the open")
	}
	if len(resp.Token) < 64 || strings.Contains(wire.SessionSubject("n1", resp.Session, "read"), resp.Token) {
		t.Fatalf("token %q: want 256 bits, never in a subject", resp.Token)
	}

	// B with its own inbox, knowing the ID but not the token.
	stolen := wire.SessionFor(bobNC, "n1", wire.SessionResponse{Session: resp.Session})
	hdr := func(k, v string) nats.Header { h := nats.Header{}; h.Set(k, v); return h }
	if _, err := stolen.Request(ctx, wire.SessionOpStdin, hdr(wire.HeaderSeq, "1"), []byte("B was here\n"), 5*time.Second); !wire.IsNotFound(err) {
		t.Errorf("B's stdin: %v, want 404", err)
	}
	if _, err := stolen.Request(ctx, wire.SessionOpRead, hdr(wire.HeaderAck, "0"), nil, 5*time.Second); !wire.IsNotFound(err) {
		t.Errorf("B's read: %v, want 404", err)
	}
	if _, err := stolen.Request(ctx, wire.SessionOpClose, nil, nil, 5*time.Second); !wire.IsNotFound(err) {
		t.Errorf("B's close: %v, want 404", err)
	}
	// B spoofing reply subjects into A's inbox (the server does not check
	// reply subjects), with a guessed token: the node answers A's inbox
	// with a 404 and changes nothing.
	for _, reply := range []string{busauth.OperatorInboxPrefix("alice") + ".spoof", short} {
		for _, op := range []string{wire.SessionOpStdin, wire.SessionOpClose, wire.SessionOpRead} {
			m := &nats.Msg{Subject: wire.SessionSubject("n1", resp.Session, op), Reply: reply, Header: hdr(wire.HeaderSessionToken, strings.Repeat("0", len(resp.Token)))}
			m.Header.Set(wire.HeaderSeq, "1")
			m.Data = []byte("B was here\n")
			if err := bobNC.PublishMsg(m); err != nil {
				t.Fatal(err)
			}
		}
	}
	if err := bobNC.Flush(); err != nil {
		t.Fatal(err)
	}
	// B cannot listen where A's answers (and A's token) go, nor to the
	// node's session traffic.
	for _, subj := range []string{busauth.OperatorInboxPrefix("alice") + ".>", "_INBOX.>", wire.SessionSubject("n1", "*", "*")} {
		s, err := bobNC.SubscribeSync(subj)
		if err == nil {
			_ = bobNC.Flush()
			bobV.Expect(t, subj)
			_ = s.Unsubscribe()
		}
	}
	if svc.OpenSessions() != 1 {
		t.Fatalf("%d sessions open after B's attempts, want A's", svc.OpenSessions())
	}

	// A still owns it: what A writes is all the command read.
	s := wire.SessionFor(aliceNC, "n1", resp)
	var out testutil.SyncBuffer
	end, err := s.Run(ctx, wire.StreamOptions{Stdin: strings.NewReader("from A\n"), Stdout: &out})
	if err != nil || end.ExitCode != 0 || out.String() != "from A\n" {
		t.Fatalf("A's session: end %+v, err %v, output %q; want exit 0 and only A's input", end, err, out.String())
	}
}

// TestOperatorScopedByNamespace checks a team-a operator and a team-a
// read-only operator against a server configured as docs/security.md
// says: every write outside team-a is refused by the server, every
// command on a team-b pod by the server or the node, and the read-only
// operator writes, execs and attaches nothing.
func TestOperatorScopedByNamespace(t *testing.T) {
	srv, _, _ := secureNode(t, "team-a/web", "team-b/web")
	admin := bustest.ConnectWithProtocol(t, srv)
	ctx, cancel := context.WithTimeout(context.Background(), 60*time.Second)
	defer cancel()
	for _, b := range []string{wire.DesiredBucket, wire.ConfigMapsBucket, wire.SecretsBucket} {
		kv, err := admin.JS.KeyValue(ctx, b)
		if err != nil {
			t.Fatal(err)
		}
		for _, k := range []string{"node.n1.team-a.web", "node.n1.team-b.web", "fleet.team-b.web"} {
			if _, err := kv.Put(ctx, k, []byte(`{"old":true}`)); err != nil {
				t.Fatal(err)
			}
		}
	}
	status, err := admin.JS.KeyValue(ctx, wire.StatusBucket)
	if err != nil {
		t.Fatal(err)
	}
	for _, k := range []string{"n1.team-a.web", "n1.team-b.web"} {
		if _, err := status.Put(ctx, k, []byte(`{}`)); err != nil {
			t.Fatal(err)
		}
	}

	aliceNC, aliceV := operatorConn(t, srv, "alice", busauth.OperatorScope{Namespace: "team-a"})
	readerNC, readerV := operatorConn(t, srv, "reader", busauth.OperatorScope{Namespace: "team-a", ReadOnly: true})
	refused := func(nc *nats.Conn, v *bustest.Violations, subject string, data []byte) {
		t.Helper()
		if err := nc.PublishRequest(subject, nc.NewInbox(), data); err != nil {
			t.Fatal(err)
		}
		v.Expect(t, subject)
	}

	for _, b := range []string{wire.DesiredBucket, wire.ConfigMapsBucket, wire.SecretsBucket} {
		js, _ := jetstream.New(aliceNC)
		// Its namespace: written, read back by key.
		for _, k := range []string{"node.n1.team-a.web", "node.n7.team-a.new", "fleet.team-a.web"} {
			if _, err := js.Publish(ctx, "$KV."+b+"."+k, []byte(`{"new":true}`)); err != nil {
				t.Errorf("alice writes %s %s: %v", b, k, err)
			}
			if m, err := aliceNC.Request("$JS.API.DIRECT.GET."+wire.BucketStream(b)+".$KV."+b+"."+k, nil, 5*time.Second); err != nil || string(m.Data) != `{"new":true}` {
				t.Errorf("alice reads %s %s: %v", b, k, err)
			}
		}
		// Anything else: refused, written or read, and by the bare API
		// forms whose body names the subject.
		for _, k := range []string{"node.n1.team-b.web", "fleet.team-b.web", "fleet.team-b.x", "node.n1.default.web"} {
			refused(aliceNC, aliceV, "$KV."+b+"."+k, []byte(`{"evil":true}`))
			refused(aliceNC, aliceV, "$JS.API.DIRECT.GET."+wire.BucketStream(b)+".$KV."+b+"."+k, nil)
			refused(readerNC, readerV, "$KV."+b+"."+k, []byte(`{"evil":true}`))
		}
		refused(aliceNC, aliceV, "$JS.API.DIRECT.GET."+wire.BucketStream(b), []byte(`{"last_by_subj":"$KV.`+b+`.node.n1.team-b.web"}`))
		refused(aliceNC, aliceV, "$JS.API.STREAM.MSG.GET."+wire.BucketStream(b), []byte(`{"last_by_subj":"$KV.`+b+`.node.n1.team-b.web"}`))
		// No consumers here: one could be an update of a node's own.
		refused(aliceNC, aliceV, "$JS.API.CONSUMER.CREATE."+wire.BucketStream(b)+"."+wire.NodeDesiredConsumer("n1"), []byte(`{}`))
		// Read-only: its namespace neither.
		refused(readerNC, readerV, "$KV."+b+".node.n1.team-a.web", []byte(`{"evil":true}`))
		if m, err := readerNC.Request("$JS.API.DIRECT.GET."+wire.BucketStream(b)+".$KV."+b+".node.n1.team-a.web", nil, 5*time.Second); err != nil || string(m.Data) != `{"new":true}` {
			t.Errorf("reader reads %s: %v", b, err)
		}
	}
	kv, err := admin.JS.KeyValue(ctx, wire.DesiredBucket)
	if err != nil {
		t.Fatal(err)
	}
	for _, k := range []string{"node.n1.team-b.web", "fleet.team-b.web"} {
		if e, err := kv.Get(ctx, k); err != nil || string(e.Value()) != `{"old":true}` {
			t.Errorf("team-b key %s after the refused writes: %v", k, err)
		}
	}

	// Status: a watch of its namespace (what `get pods -n team-a -w`
	// does); of another namespace or all of them, refused.
	for _, c := range []struct {
		nc *nats.Conn
		v  *bustest.Violations
	}{{aliceNC, aliceV}, {readerNC, readerV}} {
		js, _ := jetstream.New(c.nc)
		skv, err := js.KeyValue(ctx, wire.StatusBucket)
		if err != nil {
			t.Fatal(err)
		}
		w, err := skv.Watch(ctx, "*.team-a.*")
		if err != nil {
			t.Fatalf("watch team-a status: %v", err)
		}
		var keys []string
		for e := range w.Updates() {
			if e == nil {
				break
			}
			keys = append(keys, e.Key())
		}
		_ = w.Stop()
		if len(keys) != 1 || keys[0] != "n1.team-a.web" {
			t.Errorf("team-a status keys %v, want [n1.team-a.web]", keys)
		}
		for _, filter := range []string{"*.team-b.*", ">"} {
			wctx, wcancel := context.WithTimeout(ctx, refuseWait)
			if _, err := skv.Watch(wctx, filter); err == nil {
				t.Errorf("watch of status %s allowed", filter)
			}
			wcancel()
		}
		c.v.ExpectPrefix(t, "$JS.API.CONSUMER.CREATE."+busauth.StatusStream+".")
	}

	// Commands: on the namespaced subject, only team-a's pods; the plain
	// subjects (every namespace) are refused by the server; a team-b pod
	// named on team-a's subject is refused by the node.
	alice := &wire.Client{NC: aliceNC, Timeout: 5 * time.Second}
	if p, err := alice.GetPod(ctx, "n1", "team-a", "web"); err != nil || p.Namespace != "team-a" {
		t.Fatalf("alice gets team-a/web: %v", err)
	}
	if r, err := alice.Exec(ctx, "n1", wire.ExecRequest{Namespace: "team-a", Name: "web", Command: []string{"id"}}); err != nil || string(r.Stdout) != "id" {
		t.Fatalf("alice execs in team-a/web: %v", err)
	}
	if _, err := alice.ListPods(ctx, "n1", "team-a"); err != nil {
		t.Fatalf("alice lists team-a: %v", err)
	}
	for _, verb := range []string{wire.VerbExec, wire.VerbPodsGet, wire.VerbEvict, wire.VerbRestart, wire.VerbStreamExec, wire.VerbLogs, wire.VerbPlacement} {
		refused(aliceNC, aliceV, wire.CommandSubject("n1", verb), []byte(`{"namespace":"team-b","name":"web","command":["id"]}`))
		refused(aliceNC, aliceV, wire.NamespacedCommandSubject("n1", "team-b", verb), []byte(`{"namespace":"team-b","name":"web","command":["id"]}`))
	}
	for _, c := range []struct {
		verb string
		body string
	}{
		{wire.VerbExec, `{"namespace":"team-b","name":"web","command":["id"]}`},
		{wire.VerbPodsGet, `{"namespace":"team-b","name":"web"}`},
		{wire.VerbPodsGet, `{"name":"web"}`}, // "default"
		{wire.VerbPodsList, `{}`},            // all namespaces
		{wire.VerbEvict, `{"Namespace":"team-b","name":"web"}`},
		{wire.VerbRestart, `{"namespace":"team-a","namespace":"team-b","name":"web"}`},
		{wire.VerbStreamExec, `{"namespace":"team-b","name":"web","command":["sh"]}`},
		{wire.VerbLogs, `{"namespace":"team-b","name":"web"}`},
	} {
		var resp json.RawMessage
		err := alice.CallPod(ctx, "n1", "team-a", c.verb, 5*time.Second, json.RawMessage(c.body), &resp)
		if wire.ErrorCode(err) != wire.CodeForbidden {
			t.Errorf("%s %s on team-a's subject: %v, want 403", c.verb, c.body, err)
		}
	}

	// Read-only: lists, gets, describes on its namespace; never exec,
	// attach, port-forward, restart or evict.
	reader := &wire.Client{NC: readerNC, Timeout: 5 * time.Second}
	if _, err := reader.GetPod(ctx, "n1", "team-a", "web"); err != nil {
		t.Fatalf("reader gets team-a/web: %v", err)
	}
	if _, err := reader.DescribePod(ctx, "n1", "team-a", "web"); err != nil {
		t.Fatalf("reader describes team-a/web: %v", err)
	}
	var log strings.Builder
	if _, err := reader.Logs(ctx, "n1", wire.LogsRequest{Namespace: "team-a", Name: "web", Container: "app"}, &log); err != nil || log.String() != "hello from team-a/web\n" {
		t.Fatalf("reader reads team-a/web's log: %q, %v", log.String(), err)
	}
	for _, verb := range []string{wire.VerbExec, wire.VerbStreamExec, wire.VerbStreamAttach, wire.VerbStreamPortForward, wire.VerbRestart, wire.VerbEvict} {
		refused(readerNC, readerV, wire.NamespacedCommandSubject("n1", "team-a", verb), []byte(`{"namespace":"team-a","name":"web","command":["id"]}`))
	}
	refused(readerNC, readerV, wire.SessionSubject("n1", "0123", wire.SessionOpStdin), []byte("x"))
}
