package remote

import (
	"context"
	"encoding/json"
	"fmt"
	"slices"
	"sync"
	"testing"

	"github.com/actorlet/actorlet/messages/wire"
	"github.com/actorlet/actorlet/test/testutil"

	v1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"

	"github.com/actorlet/actorlet/messages"
	"github.com/actorlet/actorlet/node/publish"
)

// A status an earlier run of the agent published for a pod whose key was
// deleted while the agent was away is pruned at the first snapshot; the
// statuses of desired pods, static pods and other nodes are kept.
func TestStaleStatusesArePrunedAtStart(t *testing.T) {
	e := newEnv(t)
	kv, err := e.conn.JS.KeyValue(e.ctx, wire.StatusBucket)
	if err != nil {
		t.Fatal(err)
	}
	seed := func(node, name, source string) {
		t.Helper()
		pod := &v1.Pod{ObjectMeta: metav1.ObjectMeta{Namespace: "default", Name: name,
			Annotations: map[string]string{messages.ConfigSourceAnnotation: source}}}
		pod.Status.Phase = v1.PodRunning
		data, _ := json.Marshal(pod)
		if _, err := kv.Put(e.ctx, wire.StatusKey(node, "default", name), data); err != nil {
			t.Fatal(err)
		}
	}
	seed("n1", "gone", messages.SourceRemote)
	seed("n1", "kept", messages.SourceRemote)
	seed("n1", "web-n1", messages.SourceFile)
	seed("n2", "gone", messages.SourceRemote)
	e.putPod(t, "n1", "kept", "a:1")

	_, c := e.start(t, "n1", nil)
	c.waitUpdates(t, 1)
	testutil.Eventually(t, waitFor, func() error {
		if e.status(t, "n1", "default", "gone") != nil {
			return fmt.Errorf("the stale status of n1/default/gone is still there")
		}
		return nil
	})
	for _, k := range [][2]string{{"n1", "kept"}, {"n1", "web-n1"}, {"n2", "gone"}} {
		if e.status(t, k[0], "default", k[1]) == nil {
			t.Errorf("status %s/default/%s was pruned, want it kept", k[0], k[1])
		}
	}
}

// countingStatuses is the real status publisher, counting the reads of
// single entries the source asks for; with incomplete it reports every
// prune as incomplete (as when the listing failed).
type countingStatuses struct {
	*publish.StatusPublisher
	incomplete bool
	mu         sync.Mutex
	reads      []string // "read ns/name" or "deleteIf ns/name"
}

func (c *countingStatuses) note(op, namespace, name string) {
	c.mu.Lock()
	defer c.mu.Unlock()
	c.reads = append(c.reads, op+" "+namespace+"/"+name)
}

func (c *countingStatuses) Read(ctx context.Context, namespace, name string) (*v1.Pod, error) {
	c.note("read", namespace, name)
	return c.StatusPublisher.Read(ctx, namespace, name)
}

func (c *countingStatuses) DeleteIf(ctx context.Context, namespace, name string, match func(*v1.Pod) bool) bool {
	c.note("deleteIf", namespace, name)
	return c.StatusPublisher.DeleteIf(ctx, namespace, name, match)
}

func (c *countingStatuses) PruneStale(ctx context.Context, source string, keep []wire.PodRef) bool {
	complete := c.StatusPublisher.PruneStale(ctx, source, keep)
	return complete && !c.incomplete
}

func (c *countingStatuses) taken() []string {
	c.mu.Lock()
	defer c.mu.Unlock()
	return append([]string(nil), c.reads...)
}

// A key first seen after the first snapshot, once that snapshot's prune is
// complete, costs no read of its status entry (no earlier run's
// FailedValidation entry can be left for it: a round trip per new pod and
// two bus messages saved). A key of the first snapshot is read as before,
// and so is every new key when the prune was not complete, which then
// still clears an earlier run's FailedValidation entry.
func TestNewKeysReadNoStatusAfterACompletePrune(t *testing.T) {
	for _, incomplete := range []bool{false, true} {
		t.Run(fmt.Sprintf("incomplete=%v", incomplete), func(t *testing.T) {
			e := newEnv(t)
			e.putPod(t, "n1", "first", "a:1")
			var counted *countingStatuses
			_, c := e.startWith(t, "n1", func(cfg *Config) {
				counted = &countingStatuses{StatusPublisher: cfg.Statuses.(*publish.StatusPublisher), incomplete: incomplete}
				cfg.Statuses = counted
			})
			c.waitUpdates(t, 1)
			before := counted.taken()
			if !slices.Contains(before, "deleteIf default/first") {
				t.Errorf("the first snapshot's key: reads %v, want its FailedValidation check", before)
			}
			// What an earlier run left and an incomplete prune missed.
			kv, err := e.conn.JS.KeyValue(e.ctx, wire.StatusBucket)
			if err != nil {
				t.Fatal(err)
			}
			left := &v1.Pod{ObjectMeta: metav1.ObjectMeta{Namespace: "default", Name: "later",
				Annotations: map[string]string{messages.ConfigSourceAnnotation: messages.SourceRemote}}}
			left.Status = v1.PodStatus{Phase: v1.PodFailed, Reason: FailedValidationReason}
			data, _ := json.Marshal(left)
			if _, err := kv.Put(e.ctx, wire.StatusKey("n1", "default", "later"), data); err != nil {
				t.Fatal(err)
			}
			e.putPod(t, "n1", "later", "a:1")
			if u := c.waitUpdates(t, 2)[1]; u.Op != messages.OpAdd {
				t.Fatalf("second update %v, want an ADD", u)
			}
			after := counted.taken()[len(before):]
			if !incomplete {
				if len(after) != 0 {
					t.Errorf("a key new after a complete prune read %v, want nothing", after)
				}
				return
			}
			if !slices.Equal(after, []string{"deleteIf default/later"}) {
				t.Errorf("a key new after an incomplete prune read %v, want its FailedValidation check", after)
			}
			if st := e.status(t, "n1", "default", "later"); st != nil {
				t.Errorf("after an incomplete prune the FailedValidation entry is still there: %+v", st.Status)
			}
		})
	}
}
