package bus

import (
	"fmt"
	"strings"
	"testing"
	"time"

	"github.com/nats-io/nats-server/v2/server"
	"github.com/nats-io/nats.go"
	"github.com/nats-io/nats.go/jetstream"
)

// A read whose pull requests go unanswered (a server too loaded to keep
// the heartbeat's pace, a request lost with a consumer leader) asks again
// through maxSilences silences in a row and goes on, contiguous, when an
// answer comes; after one more silence it ends. The consumer here is a
// responder on a real server that receives the read's requests and answers
// those it is told to with what JetStream would send (the same metadata).
func TestReadAsksAgainThroughSilences(t *testing.T) {
	old := pullSilence
	pullSilence = 150 * time.Millisecond
	t.Cleanup(func() { pullSilence = old })

	srv, err := server.NewServer(&server.Options{Host: "127.0.0.1", Port: -1, NoLog: true, NoSigs: true})
	if err != nil {
		t.Fatal(err)
	}
	go srv.Start()
	t.Cleanup(srv.Shutdown)
	if !srv.ReadyForConnections(10 * time.Second) {
		t.Fatal("server not ready")
	}
	connect := func() *nats.Conn {
		nc, err := nats.Connect(srv.ClientURL())
		if err != nil {
			t.Fatal(err)
		}
		t.Cleanup(nc.Close)
		return nc
	}
	nc, consumerSide := connect(), connect()

	inbox := nc.NewInbox()
	msgs := make(chan *nats.Msg, 2*pullBatch)
	sub, err := nc.ChanSubscribe(inbox, msgs)
	if err != nil {
		t.Fatal(err)
	}
	// The consumer: answers request 0 with the first message and request
	// 3 (the third renewal) with the second; nothing else. An answer goes
	// straight onto the read's inbox channel, as the client delivers it:
	// a client may not publish with a JetStream ack subject as its reply.
	requests := make(chan *nats.Msg, 64)
	if _, err := consumerSide.ChanSubscribe("test.next", requests); err != nil {
		t.Fatal(err)
	}
	if err := consumerSide.Flush(); err != nil { // the server has the subscription
		t.Fatal(err)
	}
	answers := map[int]uint64{0: 1, 3: 2} // request → consumer sequence delivered
	seen := make(chan int, 64)
	go func() {
		for i := 0; ; i++ {
			req, ok := <-requests
			if !ok {
				return
			}
			seen <- i
			if req.Reply != inbox {
				t.Errorf("request %d answers to %q, not the read's inbox", i, req.Reply)
			}
			if dseq, ok := answers[i]; ok {
				msgs <- &nats.Msg{Subject: "$KV.b.k", Sub: sub, Data: []byte("v"), Header: nats.Header{},
					Reply: fmt.Sprintf("$JS.ACK.S.c.1.%d.%d.%d.0", 10*dseq, dseq, time.Now().UnixNano())}
			}
		}
	}()

	r := &pullReader{nc: nc, sub: sub, msgs: msgs, inbox: inbox, bucket: "b", consumer: "c", next: "test.next", nextDseq: 1, live: true}
	out := make(chan jetstream.KeyValueEntry, 8)
	stop := make(chan struct{})
	t.Cleanup(func() { close(stop) })
	done := make(chan error, 1)
	go func() { done <- r.run(out, stop) }()

	next := func() jetstream.KeyValueEntry {
		t.Helper()
		select {
		case e := <-out:
			return e
		case err := <-done:
			t.Fatalf("the read ended: %v", err)
		case <-time.After(20 * time.Second):
			t.Fatal("nothing delivered in 20 s")
		}
		return nil
	}
	if e := next(); e == nil || e.Revision() != 10 {
		t.Fatalf("first entry %v", e)
	}
	if e := next(); e != nil {
		t.Fatalf("end of the stored entries: %v", e)
	}
	if e := next(); e == nil || e.Revision() != 20 {
		t.Fatalf("entry after three unanswered renewals: %v", e)
	}
	// Unanswered from now on: three more renewals, then the read ends.
	select {
	case err := <-done:
		if err == nil || !strings.Contains(err.Error(), fmt.Sprintf("nothing heard for %d x", maxSilences+1)) {
			t.Fatalf("the read ended with %v", err)
		}
	case <-time.After(20 * time.Second):
		t.Fatal("the read did not end")
	}
	if n := len(seen); n != 4+maxSilences {
		t.Errorf("%d pull requests, want %d (the first, three renewals answered by the third, three more)", n, 4+maxSilences)
	}
}
