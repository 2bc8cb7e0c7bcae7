package main

import (
	"context"
	"encoding/json"
	"fmt"
	"strings"
	"testing"
	"time"

	v1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"

	"github.com/actorlet/actorlet/bus/bustest"
	"github.com/actorlet/actorlet/messages/wire"
)

// TestEventsOnCluster (issue 18): `actorletctl events` reads the events
// stream of a secured 3-server cluster bootstrapped with 3 replicas,
// connected to any of its servers (it failed there with "no responders
// available for request").
func TestEventsOnCluster(t *testing.T) {
	const n = 300
	cl := bustest.StartClusterWith(t, 3, bustest.ClusterOptions{Secure: true})
	t.Setenv("ACTORLET_CREDS", cl.AdminCreds())
	e := &env{t: t, url: cl.URL()}
	e.mustRun("bootstrap", "--replicas", "3")
	op := cl.Connect(t, "events-writer")
	ctx, cancel := context.WithTimeout(context.Background(), time.Minute)
	defer cancel()
	now := metav1.NewTime(time.Now())
	for i := 0; i < n; i++ {
		name := fmt.Sprintf("p%d", i)
		ev := v1.Event{
			ObjectMeta:     metav1.ObjectMeta{Namespace: "default", Name: name + ".1"},
			InvolvedObject: v1.ObjectReference{Kind: "Pod", Namespace: "default", Name: name},
			Reason:         "Started", Message: "Started container " + name, Type: v1.EventTypeNormal,
			FirstTimestamp: now, LastTimestamp: now, Count: 1,
		}
		data, err := json.Marshal(ev)
		if err != nil {
			t.Fatal(err)
		}
		if _, err := op.JS.Publish(ctx, wire.EventSubject(fmt.Sprintf("n%d", i%9), "default", name), data); err != nil {
			t.Fatal(err)
		}
	}
	for i := 0; i < cl.Size(); i++ {
		e.url = cl.ServerURL(i) // through each server in turn
		// A longer timeout than the helpers' 5 s: under a loaded make test
		// the first message of the R3 stream's new ordered consumer once
		// took longer (nats: timeout, 300 events left). What this test is
		// about, the "no responders" race, fails at once, not late.
		out := e.mustRun("--timeout", "20s", "events")
		if got := strings.Count(out, "Started container"); got != n {
			t.Fatalf("events through %s listed %d events, want %d:\n%.2000s", cl.ServerName(i), got, n, out)
		}
	}
}
