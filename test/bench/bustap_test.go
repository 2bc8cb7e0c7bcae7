package main

import (
	"testing"

	"github.com/nats-io/nats.go"
)

func TestClassify(t *testing.T) {
	status := func(code string) nats.Header { return nats.Header{"Status": []string{code}} }
	tests := []struct {
		name string
		msg  nats.Msg
		want string
	}{
		{"desired put", nats.Msg{Subject: "$KV.actorlet_desired.fleet.ns.a", Reply: "_INBOX.x.1", Data: []byte("{}")}, "desired KV writes"},
		{"desired put's ack", nats.Msg{Subject: "_INBOX.x.1", Data: []byte(`{"stream":"KV_actorlet_desired","seq":7}`)}, "desired KV writes"},
		{"desired delivery keeps the stored subject", nats.Msg{Subject: "$KV.actorlet_desired.fleet.ns.a", Reply: "$JS.ACK.KV_actorlet_desired.actorlet-node-n1.1.7.1.0.0", Data: []byte("{}")}, "desired deliveries"},
		{"delivery with a domain", nats.Msg{Subject: "$KV.actorlet_desired.node.n1.ns.a", Reply: "$JS.ACK.hub.ACC.KV_actorlet_desired.actorlet-node-n1.1.7.1.0.0.tok", Data: []byte("{}")}, "desired deliveries"},
		{"pull request", nats.Msg{Subject: "$JS.API.CONSUMER.MSG.NEXT.KV_actorlet_desired.actorlet-node-n1", Reply: "_INBOX_NODE.n1.a"}, "consumer pull requests"},
		{"pull request with a domain", nats.Msg{Subject: "$JS.hub.API.CONSUMER.MSG.NEXT.KV_actorlet_desired.actorlet-node-n1", Reply: "_INBOX_NODE.n1.a"}, "consumer pull requests"},
		{"idle heartbeat", nats.Msg{Subject: "_INBOX_NODE.n1.a", Header: status("100")}, "consumer status"},
		{"request expired", nats.Msg{Subject: "_INBOX_NODE.n1.a", Header: status("408")}, "consumer status"},
		{"ack", nats.Msg{Subject: "$JS.ACK.KV_actorlet_desired.c.1.2.3.4.5"}, "consumer acks"},
		{"status put", nats.Msg{Subject: "$KV.actorlet_status.n1.ns.a", Reply: "_INBOX_NODE.n1.b"}, "status KV writes"},
		{"status put's ack", nats.Msg{Subject: "_INBOX_NODE.n1.b", Data: []byte(`{"stream":"KV_actorlet_status","seq":9}`)}, "status KV writes"},
		{"status put refused", nats.Msg{Subject: "_INBOX_NODE.n1.b", Data: []byte(`{"error":{"code":503},"stream":"KV_actorlet_status"}`)}, "status KV writes"},
		{"status watcher's delivery", nats.Msg{Subject: "$KV.actorlet_status.n1.ns.a", Reply: "$JS.ACK.KV_actorlet_status.w.1.9.1.0.0"}, "status deliveries"},
		{"status subject", nats.Msg{Subject: "actorlet.status.n1.ns.a"}, "status subject"},
		{"heartbeat", nats.Msg{Subject: "$KV.actorlet_nodes.n1", Reply: "_INBOX_NODE.n1.c"}, "node records"},
		{"heartbeat's ack", nats.Msg{Subject: "_INBOX_NODE.n1.c", Data: []byte(`{"stream":"KV_actorlet_nodes","seq":3}`)}, "node records"},
		{"event", nats.Msg{Subject: "actorlet.events.n1.ns.a", Reply: "_INBOX_NODE.n1.d"}, "events"},
		{"event's ack", nats.Msg{Subject: "_INBOX_NODE.n1.d", Data: []byte(`{"stream":"ACTORLET_EVENTS","seq":3}`)}, "events"},
		{"direct get", nats.Msg{Subject: "$JS.API.DIRECT.GET.KV_actorlet_status.$KV.actorlet_status.n1.ns.a", Reply: "_INBOX_NODE.n1.e"}, "JetStream API"},
		{"direct get's reply", nats.Msg{Subject: "_INBOX_NODE.n1.e", Header: nats.Header{"Nats-Stream": []string{"KV_actorlet_status"}}, Data: []byte("{}")}, "JetStream API"},
		{"API reply", nats.Msg{Subject: "_INBOX.x.2", Data: []byte(`{"type":"io.nats.jetstream.api.v1.stream_info_response","total":0}`)}, "JetStream API"},
		{"command", nats.Msg{Subject: "actorlet.node.n1.pods", Reply: "_INBOX.x.3"}, "other"},
		{"command's answer", nats.Msg{Subject: "_INBOX.x.3", Data: []byte(`[]`)}, "other"},
		{"raft append", nats.Msg{Subject: "$NRG.AE.S-R3F-abc", Reply: "$NRG.R.xyz"}, "raft"},
		{"raft append's reply", nats.Msg{Subject: "$NRG.R.xyz"}, "raft"},
	}
	known := map[string]bool{}
	for _, c := range trafficClasses {
		known[c.name] = true
	}
	for _, tt := range tests {
		if got := classify(&tt.msg); got != tt.want {
			t.Errorf("%s: classify = %q, want %q", tt.name, got, tt.want)
		}
		if !known[tt.want] {
			t.Errorf("%s: class %q is not in trafficClasses", tt.name, tt.want)
		}
	}
}

func TestTapNamesRaftReplies(t *testing.T) {
	tap := &busTap{raftReplies: map[string]string{}}
	if got := tap.what("raft", &nats.Msg{Subject: "$NRG.AE.C-R3F-1", Reply: "$NRG.R.r1"}); got != "append C-R3F-1" {
		t.Errorf("append: %q", got)
	}
	if got := tap.what("raft", &nats.Msg{Subject: "$NRG.R.r1"}); got != "append reply C-R3F-1" {
		t.Errorf("reply: %q", got)
	}
	if got := tap.what("raft", &nats.Msg{Subject: "$NRG.R.unknown"}); got != "reply" {
		t.Errorf("unknown reply: %q", got)
	}
	if got := tap.what("JetStream API", &nats.Msg{Subject: "$JS.API.STREAM.MSG.GET.KV_actorlet_status"}); got != "STREAM.MSG.GET" {
		t.Errorf("msg get: %q", got)
	}
}
