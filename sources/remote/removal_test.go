package remote

import (
	"context"
	"fmt"
	"reflect"
	"sync"
	"testing"

	"github.com/actorlet/actorlet/messages/wire"
	"github.com/actorlet/actorlet/test/testutil"
)

// TestRemovalCauses: every removal reaches OnRemove with its cause (the
// agent counts them in actorlet_remote_pod_removals_total).
func TestRemovalCauses(t *testing.T) {
	const node = "n1"
	e := newEnv(t)
	var mu sync.Mutex
	var causes []RemovalCause
	_, c := e.startWith(t, node, func(cfg *Config) {
		cfg.OnRemove = func(cause RemovalCause) {
			mu.Lock()
			defer mu.Unlock()
			causes = append(causes, cause)
		}
	})
	c.waitUpdates(t, 1)
	kv, err := e.conn.JS.KeyValue(e.ctx, wire.DesiredBucket)
	if err != nil {
		t.Fatal(err)
	}
	a, b := wire.DesiredNodeKey(node, "default", "a"), wire.DesiredNodeKey(node, "default", "b")
	e.put(t, a, podJSON(t, "default", "a", "img:1"))
	e.put(t, b, podJSON(t, "default", "b", "img:1"))
	c.waitUpdates(t, 3)
	e.del(t, a)
	if err := kv.Purge(context.Background(), b); err != nil {
		t.Fatal(err)
	}
	c.waitUpdates(t, 5)
	want := []RemovalCause{CauseTombstone, CausePurge}
	testutil.Eventually(t, waitFor, func() error {
		mu.Lock()
		defer mu.Unlock()
		if !reflect.DeepEqual(causes, want) {
			return fmt.Errorf("removal causes %v, want %v", causes, want)
		}
		return nil
	})
}
