package remote

import (
	"errors"
	"strings"
	"testing"

	"github.com/nats-io/nats.go/jetstream"
	v1 "k8s.io/api/core/v1"

	"github.com/actorlet/actorlet/messages"
	"github.com/actorlet/actorlet/messages/wire"
)

func TestFinalizeDeletesOnlyAGracefullyDeletedPod(t *testing.T) {
	e := newEnv(t)
	key := wire.DesiredNodeKey("n1", "default", "web")
	s, c := e.start(t, "n1", nil)
	c.waitUpdates(t, 1)

	e.put(t, key, podJSON(t, "default", "web", "a:1"))
	running := c.waitUpdates(t, 2)[1].Pods[0]
	if err := s.Finalize(e.ctx, running); err != nil {
		t.Fatalf("Finalize of a pod not being deleted: %v", err)
	}
	e.put(t, key, podJSON(t, "default", "web", "a:1", deleting(ptr(int64(5)))))
	deleted := c.waitUpdates(t, 3)[2].Pods[0]
	if deleted.DeletionTimestamp == nil {
		t.Fatal("DELETE pod has no deletion timestamp")
	}

	// The operator re-applies before the node finalizes: the key stays, and
	// the pod, already stopping, goes and comes back as new.
	e.put(t, key, podJSON(t, "default", "web", "a:2"))
	if got := c.waitUpdates(t, 5); got[3].Op != messages.OpRemove || got[4].Op != messages.OpAdd || got[4].Pods[0].UID != deleted.UID {
		t.Fatalf("after the re-apply: %v, %v; want REMOVE then ADD of the same UID", got[3], got[4])
	}
	if err := s.Finalize(e.ctx, deleted); err != nil {
		t.Fatalf("Finalize: %v", err)
	}
	kv, err := e.conn.JS.KeyValue(e.ctx, wire.DesiredBucket)
	if err != nil {
		t.Fatal(err)
	}
	if _, err := kv.Get(e.ctx, key); err != nil {
		t.Fatalf("re-applied key was deleted: %v", err)
	}

	// Deleted again; this time the node finalizes and the key goes.
	e.put(t, key, podJSON(t, "default", "web", "a:2", deleting(nil)))
	deleted = c.waitUpdates(t, 6)[5].Pods[0]
	if err := s.Finalize(e.ctx, deleted); err != nil {
		t.Fatalf("Finalize: %v", err)
	}
	if _, err := kv.Get(e.ctx, key); !errors.Is(err, jetstream.ErrKeyNotFound) {
		t.Fatalf("key after Finalize: err = %v, want not found", err)
	}
	if got := c.waitUpdates(t, 7)[6]; got.Op != messages.OpRemove {
		t.Fatalf("got %v, want REMOVE after Finalize", got)
	}
	if err := s.Finalize(e.ctx, deleted); err != nil {
		t.Fatalf("second Finalize of a gone key: %v", err)
	}

	err = s.Finalize(e.ctx, &v1.Pod{})
	if err == nil || !strings.Contains(err.Error(), DesiredKeyAnnotation) {
		t.Fatalf("Finalize of a pod from elsewhere: err = %v", err)
	}
}

func TestStartRejectsBadConfig(t *testing.T) {
	_, err := Start(t.Context(), Config{})
	for _, want := range []string{"bus is required", "nodeName is required", "out is required", "statuses is required"} {
		if err == nil || !strings.Contains(err.Error(), want) {
			t.Errorf("Start(empty config) error = %v, want %q", err, want)
		}
	}
}
