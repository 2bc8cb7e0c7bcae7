package main

import (
	"bytes"
	"context"
	"fmt"
	"path/filepath"
	"sort"
	"strings"
	"sync"
	"time"

	"github.com/nats-io/nats-server/v2/server"
	"github.com/nats-io/nats.go"

	"github.com/actorlet/actorlet/messages/wire"
	"github.com/actorlet/actorlet/messages/wire/busauth"
)

// A busTap counts the bus's messages by subject class, from the servers'
// side: on every server it holds a queue subscription to ">" in the
// application account and one to "$NRG.>" (raft) in the system account.
// The servers deliver every message published in those accounts to the
// tap's member on the server where it was published (a queue group's
// local member is preferred and the group has one on every server), so
// each message is counted once, where it entered the bus, and the taps
// cause no route traffic of their own. What the taps receive is taken
// out of the servers' totals again (connz of the taps' connections).
type busTap struct {
	servers []*natsProc
	conns   []*nats.Conn // per server: the application tap, then the system tap
	subs    []*nats.Subscription

	mu     sync.Mutex
	counts map[string]classCount
	// detail splits the classes further (class, then what within it),
	// to find where the messages go; raftReplies maps a raft append's
	// reply subject to its group, so the followers' answers are placed.
	detail      map[[2]string]classCount
	raftReplies map[string]string
}

// classCount is the messages and bytes (headers and payload, as the
// servers count them) of one class.
type classCount struct{ msgs, bytes int64 }

// trafficClass names a class of bus messages and says how it is recognised.
type trafficClass struct{ name, how string }

// The classes of tapped messages, in the order the table prints them.
var trafficClasses = []trafficClass{
	{"desired KV writes", "`$KV.actorlet_desired.>` and each write's ack (an inbox message naming stream KV_actorlet_desired)"},
	{"desired deliveries", "inbox messages whose reply is `$JS.ACK.KV_actorlet_desired.…`: one per entry each node's consumer delivers"},
	{"consumer pull requests", "`$JS.API.CONSUMER.MSG.NEXT.>`"},
	{"consumer status", "empty inbox messages with a Status header: a pull request's idle heartbeats (100) and ends (404, 408, 409)"},
	{"consumer acks", "`$JS.ACK.>`"},
	{"status KV writes", "`$KV.actorlet_status.>` and each write's ack"},
	{"status subject", "`actorlet.status.>` (the plain publish after each status write)"},
	{"status deliveries", "inbox messages whose reply is `$JS.ACK.KV_actorlet_status.…`: the harness's watcher (an operator's `get pods -w`) and the nodes' status consumers"},
	{"node records", "`$KV.actorlet_nodes.>` and each write's ack, and their deliveries"},
	{"events", "`actorlet.events.>`, each publish's ack (stream ACTORLET_EVENTS), and their deliveries"},
	{"JetStream API", "every other `$JS.API.>` request, and the replies (bodies of type io.nats.jetstream.api.v1.…, direct gets)"},
	{"other", "everything else in the application account"},
	{"raft", "`$NRG.>` in the system account: stream and consumer replication, votes, their replies"},
}

// tapQueue is the taps' queue group.
const tapQueue = "actorlet-bench-tap"

// A tap that falls behind holds at most this much (a run whose servers
// are starved once grew the process to 9 GB without a bound); what it
// drops is counted (busTraffic.dropped) and printed under the table.
const (
	tapPendingMsgs  = 1 << 20
	tapPendingBytes = 512 << 20
)

// startBusTap subscribes on every running server of b. Without classes
// it subscribes nothing and reads only the servers' counters: the taps'
// deliveries are work for the servers (every message once more) and for
// this process, which a run timing the fleet leaves out.
func startBusTap(b *benchBus, classes bool) (*busTap, error) {
	if !classes {
		t := &busTap{counts: map[string]classCount{}, detail: map[[2]string]classCount{}}
		for _, s := range b.servers {
			if s != nil {
				t.servers = append(t.servers, s)
			}
		}
		return t, nil
	}
	sys, err := b.auth.IssueSystem("bench-tap")
	if err != nil {
		return nil, err
	}
	sysCreds := filepath.Join(b.auth.Dir, "bench-tap-sys.creds")
	if err := busauth.WriteCreds(sysCreds, sys); err != nil {
		return nil, err
	}
	t := &busTap{counts: map[string]classCount{}, detail: map[[2]string]classCount{}, raftReplies: map[string]string{}}
	for _, s := range b.servers {
		if s == nil {
			continue
		}
		for _, side := range []struct{ creds, subject string }{{b.adminCreds(), ">"}, {sysCreds, "$NRG.>"}} {
			nc, err := nats.Connect(s.clientURL(), nats.UserCredentials(side.creds), nats.Name(tapQueue),
				nats.NoReconnect(), nats.DontRandomize())
			if err != nil {
				t.stop()
				return nil, fmt.Errorf("bus tap on %s: %w", s.name, err)
			}
			t.conns = append(t.conns, nc)
			t.servers = append(t.servers, s)
			sub, err := nc.QueueSubscribe(side.subject, tapQueue, t.count)
			if err == nil {
				err = sub.SetPendingLimits(tapPendingMsgs, tapPendingBytes)
			}
			if err == nil {
				err = nc.Flush()
			}
			if err != nil {
				t.stop()
				return nil, fmt.Errorf("bus tap on %s: %w", s.name, err)
			}
			t.subs = append(t.subs, sub)
		}
	}
	return t, nil
}

func (t *busTap) count(m *nats.Msg) {
	c := classify(m)
	n := int64(len(m.Data))
	for k, vs := range m.Header {
		for _, v := range vs {
			n += int64(len(k) + len(v) + 4) // "k: v\r\n"
		}
	}
	if len(m.Header) > 0 {
		n += 12 // "NATS/1.0\r\n" and the closing "\r\n"
	}
	t.mu.Lock()
	defer t.mu.Unlock()
	cc := t.counts[c]
	cc.msgs++
	cc.bytes += n
	t.counts[c] = cc
	d := [2]string{c, t.what(c, m)}
	cd := t.detail[d]
	cd.msgs++
	cd.bytes += n
	t.detail[d] = cd
}

// what says what a message of class c is, within its class (t.mu held).
func (t *busTap) what(c string, m *nats.Msg) string {
	tokens := strings.Split(m.Subject, ".")
	switch c {
	case "raft":
		switch {
		case len(tokens) == 3 && tokens[1] == "AE":
			if m.Reply != "" && len(t.raftReplies) < 100000 {
				t.raftReplies[m.Reply] = tokens[2]
			}
			return "append " + tokens[2]
		case len(tokens) == 3 && tokens[1] == "R":
			if g, ok := t.raftReplies[m.Subject]; ok {
				return "append reply " + g
			}
			return "reply"
		case len(tokens) >= 2:
			return tokens[1]
		}
	case "JetStream API", "consumer pull requests":
		if i := indexOf(tokens, "API"); i >= 0 {
			op := tokens[i+1:]
			switch {
			case len(op) >= 2 && (op[0] == "STREAM" || op[0] == "CONSUMER" || op[0] == "DIRECT"):
				if op[1] == "MSG" && len(op) >= 3 {
					return strings.Join(op[:3], ".")
				}
				return strings.Join(op[:2], ".")
			case len(op) >= 1:
				return op[0]
			}
		}
		if m.Header.Get("Nats-Stream") != "" {
			return "direct get reply"
		}
		head := string(m.Data[:min(len(m.Data), 120)])
		if i := strings.Index(head, "api.v1."); i >= 0 {
			typ := head[i+len("api.v1."):]
			if j := strings.IndexByte(typ, '"'); j >= 0 {
				typ = typ[:j]
			}
			return "reply " + typ
		}
	case "desired KV writes", "status KV writes", "node records", "events", "status subject", "other":
		switch {
		case strings.HasPrefix(m.Reply, "$JS.ACK."):
			return "delivery"
		case strings.HasPrefix(m.Subject, "_INBOX"):
			return "ack"
		case c == "other" && len(tokens) >= 2:
			return strings.Join(tokens[:2], ".")
		}
		return "publish"
	case "consumer status":
		return "status " + m.Header.Get("Status")
	}
	return ""
}

func indexOf(list []string, s string) int {
	for i, x := range list {
		if x == s {
			return i
		}
	}
	return -1
}

// classify names the class of a tapped message.
func classify(m *nats.Msg) string {
	subj := m.Subject
	// A consumer's delivery keeps the stored message's subject; its reply
	// is the ack subject, which names the stream.
	if strings.HasPrefix(m.Reply, "$JS.ACK.") {
		return deliveryClass(strings.TrimPrefix(m.Reply, "$JS.ACK."))
	}
	switch {
	case strings.HasPrefix(subj, "$NRG."):
		return "raft"
	case strings.HasPrefix(subj, "$KV."+wire.DesiredBucket+"."):
		return "desired KV writes"
	case strings.HasPrefix(subj, "$KV."+wire.StatusBucket+"."):
		return "status KV writes"
	case strings.HasPrefix(subj, "$KV."+wire.NodesBucket+"."):
		return "node records"
	case strings.HasPrefix(subj, "actorlet.status."):
		return "status subject"
	case strings.HasPrefix(subj, "actorlet.events."):
		return "events"
	case strings.HasPrefix(subj, "$JS.ACK."):
		return "consumer acks"
	case strings.HasPrefix(subj, "$JS.") && strings.Contains(subj, ".API.CONSUMER.MSG.NEXT."):
		return "consumer pull requests"
	case strings.HasPrefix(subj, "$JS.") && strings.Contains(subj, ".API."):
		return "JetStream API"
	case !strings.HasPrefix(subj, "_INBOX"):
		return "other"
	}
	// A message to an inbox: a consumer's status, a write's ack or an API
	// reply.
	if len(m.Data) == 0 && m.Header.Get("Status") != "" {
		return "consumer status"
	}
	if m.Header.Get("Nats-Stream") != "" { // a direct get's reply
		return "JetStream API"
	}
	head := m.Data[:min(len(m.Data), 256)]
	if bytes.HasPrefix(head, []byte(`{"type":"io.nats.jetstream.api.v1.`)) {
		return "JetStream API"
	}
	for _, s := range []struct{ stream, class string }{
		{"KV_" + wire.DesiredBucket, "desired KV writes"},
		{"KV_" + wire.StatusBucket, "status KV writes"},
		{"KV_" + wire.NodesBucket, "node records"},
		{wire.EventsStream, "events"},
	} {
		if bytes.Contains(head, []byte(`"stream":"`+s.stream+`"`)) {
			return s.class
		}
	}
	return "other"
}

// deliveryClass is the class of a consumer's delivery, by its ack
// subject's tail (<domain.hash.>stream.consumer.…; without a domain the
// stream comes first).
func deliveryClass(ack string) string {
	switch {
	case strings.Contains(ack, "KV_"+wire.DesiredBucket+"."):
		return "desired deliveries"
	case strings.Contains(ack, "KV_"+wire.StatusBucket+"."):
		return "status deliveries"
	case strings.Contains(ack, "KV_"+wire.NodesBucket+"."):
		return "node records"
	case strings.Contains(ack, wire.EventsStream+"."):
		return "events"
	}
	return "other"
}

// busTraffic is a reading of the tap and the servers' counters.
type busTraffic struct {
	classes map[string]classCount
	detail  map[[2]string]classCount
	// groups names the raft groups (stream or consumer, and its stream)
	groups map[string]string
	// routes: messages and bytes the servers sent each other (routez,
	// each message counted once, at its sender); total: the servers'
	// varz in+out, less what the taps received.
	routes, total classCount
	// dropped: messages a tap could not keep (pending limit); they are in
	// no class.
	dropped int64
}

// read drains what the taps were sent so far and reads every running
// server's counters.
func (t *busTap) read(ctx context.Context) (busTraffic, error) {
	var dropped int64
	for i, nc := range t.conns {
		if n, err := t.subs[i].Dropped(); err == nil {
			dropped += int64(n)
		}
		if !t.servers[i].running() || nc.IsClosed() {
			continue
		}
		if err := nc.FlushTimeout(10 * time.Second); err != nil {
			continue // the server went away (the kill topology)
		}
		// The tap counts in its own goroutine: wait until it has caught up.
		for {
			n, _, err := t.subs[i].Pending()
			if err != nil || n == 0 {
				break
			}
			select {
			case <-ctx.Done():
				return busTraffic{}, ctx.Err()
			case <-time.After(10 * time.Millisecond):
			}
		}
	}
	r := busTraffic{dropped: dropped}
	t.mu.Lock()
	r.classes = make(map[string]classCount, len(t.counts))
	for k, v := range t.counts {
		r.classes[k] = v
	}
	r.detail = make(map[[2]string]classCount, len(t.detail))
	for k, v := range t.detail {
		r.detail[k] = v
	}
	t.mu.Unlock()
	r.groups = map[string]string{}
	seen := map[*natsProc]bool{}
	for i, s := range t.servers {
		if !s.running() {
			continue
		}
		if !seen[s] {
			seen[s] = true
			var v server.Varz
			if err := s.get(ctx, "/varz", &v); err == nil {
				r.total.msgs += v.InMsgs + v.OutMsgs
				r.total.bytes += v.InBytes + v.OutBytes
			}
			var jsz server.JSInfo
			if err := s.get(ctx, "/jsz?accounts=true&streams=true&consumers=true&raft=true", &jsz); err == nil {
				if jsz.Meta != nil {
					r.groups["_meta_"] = "meta"
				}
				for _, a := range jsz.AccountDetails {
					for _, sd := range a.Streams {
						if sd.RaftGroup != "" {
							r.groups[sd.RaftGroup] = "stream " + sd.Name
						}
						for _, cg := range sd.ConsumerRaftGroups {
							r.groups[cg.RaftGroup] = "consumer " + consumerKind(cg.Name) + " on " + sd.Name
						}
					}
				}
			}
			var rz server.Routez
			if err := s.get(ctx, "/routez", &rz); err == nil {
				for _, ri := range rz.Routes {
					r.routes.msgs += ri.OutMsgs
					r.routes.bytes += ri.OutBytes
				}
			}
		}
		// What the server sent this tap is not the fleet's traffic.
		if i >= len(t.conns) {
			continue
		}
		if cid, err := t.conns[i].GetClientID(); err == nil {
			var cz server.Connz
			if err := s.get(ctx, fmt.Sprintf("/connz?cid=%d", cid), &cz); err == nil && len(cz.Conns) == 1 {
				r.total.msgs -= cz.Conns[0].OutMsgs + cz.Conns[0].InMsgs
				r.total.bytes -= cz.Conns[0].OutBytes + cz.Conns[0].InBytes
			}
		}
	}
	return r, nil
}

// sub is the traffic between two readings.
func (r busTraffic) sub(before busTraffic) busTraffic {
	out := busTraffic{classes: map[string]classCount{}, detail: map[[2]string]classCount{}, groups: r.groups,
		routes:  classCount{r.routes.msgs - before.routes.msgs, r.routes.bytes - before.routes.bytes},
		total:   classCount{r.total.msgs - before.total.msgs, r.total.bytes - before.total.bytes},
		dropped: r.dropped - before.dropped}
	for k, v := range r.classes {
		b := before.classes[k]
		out.classes[k] = classCount{v.msgs - b.msgs, v.bytes - b.bytes}
	}
	for k, v := range r.detail {
		b := before.detail[k]
		out.detail[k] = classCount{v.msgs - b.msgs, v.bytes - b.bytes}
	}
	return out
}

// consumerKind is a consumer's name without its node (actorlet-node-<node>
// is "actorlet-node-*"), so a fleet's consumers add up.
func consumerKind(name string) string {
	for _, p := range []string{"actorlet-node-", "actorlet-status-", "actorlet-objects-"} {
		if strings.HasPrefix(name, p) {
			return p + "*"
		}
	}
	return "(other)"
}

// detailTable breaks the classes down (raft by group, the API by call),
// the rows of at least 0.01 message per pod, largest first.
func detailTable(k, p int, topos []clusterTopology, traffic []busTraffic) *table {
	header := []string{"class", "what"}
	for _, topo := range topos {
		header = append(header, topo.name+" msgs/pod")
	}
	t := newTable(fmt.Sprintf("NATS traffic per pod in detail: %d agents × %d pods", k, p), header...)
	pods := float64(k * p)
	type row struct {
		key   [2]string
		cells []float64
		sum   float64
	}
	rows := map[[2]string]*row{}
	for i, tr := range traffic {
		for key, c := range tr.detail {
			what := key[1]
			// name raft groups (their names differ between runs)
			for _, pre := range []string{"append reply ", "append "} {
				if g, ok := strings.CutPrefix(what, pre); ok {
					if n, ok := tr.groups[g]; ok {
						what = pre + n
					} else {
						what = pre + "(group gone)"
					}
					break
				}
			}
			rk := [2]string{key[0], what}
			r := rows[rk]
			if r == nil {
				r = &row{key: rk, cells: make([]float64, len(traffic))}
				rows[rk] = r
			}
			v := float64(c.msgs) / pods
			r.cells[i] += v
			r.sum += v
		}
	}
	list := make([]*row, 0, len(rows))
	for _, r := range rows {
		if r.sum >= 0.01 {
			list = append(list, r)
		}
	}
	sort.Slice(list, func(i, j int) bool { return list[i].sum > list[j].sum })
	for _, r := range list {
		cells := []any{r.key[0], r.key[1]}
		for _, v := range r.cells {
			cells = append(cells, fmt.Sprintf("%.2f", v))
		}
		t.add(cells...)
	}
	return t
}

func (t *busTap) stop() {
	for _, nc := range t.conns {
		nc.Close()
	}
}
