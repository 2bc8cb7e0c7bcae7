// Package objects keeps a node's view of the ConfigMaps and Secrets on the
// bus (wire.ConfigMapsBucket, wire.SecretsBucket): it watches the keys the
// node may read (its node scope and the fleet scope), keeps the decoded
// objects in memory for the runtime manager, and reports changes so pods
// that use an object are synced (volumes updated). It never logs a
// Secret's data.
package objects

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"github.com/actorlet/actorlet/messages/wire"
	"sync"
	"time"

	"github.com/nats-io/nats.go/jetstream"
	v1 "k8s.io/api/core/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	"k8s.io/apimachinery/pkg/runtime/schema"
	"k8s.io/klog/v2"

	"github.com/actorlet/actorlet/cmd/actorlet/bus"
	"github.com/actorlet/actorlet/sources/validation"
)

// Limits.
const (
	// MaxObjects bounds how many objects of each kind a node keeps.
	MaxObjects  = 10000
	rewatchBase = 100 * time.Millisecond
	rewatchMax  = 5 * time.Second
)

// Ref names one object of a kind.
type Ref struct {
	Kind      string // "ConfigMap" or "Secret"
	Namespace string
	Name      string
}

// scoped keeps the node-scoped and fleet-scoped object of one name.
type scoped[T any] struct {
	node, fleet *T
}

func (s scoped[T]) get() *T {
	if s.node != nil {
		return s.node
	}
	return s.fleet
}

// Store is the node's cache of ConfigMaps and Secrets. Safe for
// concurrent use.
type Store struct {
	node     string
	onChange func(Ref)

	mu         sync.RWMutex
	configMaps map[[2]string]scoped[v1.ConfigMap]
	secrets    map[[2]string]scoped[v1.Secret]
	ready      map[string]bool // bucket → initial values applied

	cancel context.CancelFunc
	wg     sync.WaitGroup
}

// Start watches both buckets for node. onChange (may be nil) is called,
// from the watch goroutines, for every object that changed or went away.
func Start(ctx context.Context, conn *bus.Conn, node string, onChange func(Ref)) (*Store, error) {
	if onChange == nil {
		onChange = func(Ref) {}
	}
	s := &Store{node: node, onChange: onChange, configMaps: map[[2]string]scoped[v1.ConfigMap]{},
		secrets: map[[2]string]scoped[v1.Secret]{}, ready: map[string]bool{}}
	kvs := map[string]jetstream.KeyValue{}
	for _, b := range []string{wire.ConfigMapsBucket, wire.SecretsBucket} {
		kv, err := conn.JS.KeyValue(ctx, b)
		if err != nil {
			return nil, fmt.Errorf("open bucket %q (has EnsureProtocol run?): %w", b, err)
		}
		kvs[b] = kv
	}
	runCtx, cancel := context.WithCancel(context.Background())
	s.cancel = cancel
	for b, kv := range kvs {
		s.wg.Add(1)
		go s.run(runCtx, b, kv)
	}
	return s, nil
}

// Stop ends the watches and waits for them.
func (s *Store) Stop() {
	s.cancel()
	s.wg.Wait()
}

// Ready reports whether both buckets' initial values were loaded.
func (s *Store) Ready() bool {
	s.mu.RLock()
	defer s.mu.RUnlock()
	return s.ready[wire.ConfigMapsBucket] && s.ready[wire.SecretsBucket]
}

// ConfigMap returns the ConfigMap namespace/name this node sees (its
// node-scoped one, else the fleet one), or a NotFound error.
func (s *Store) ConfigMap(namespace, name string) (*v1.ConfigMap, error) {
	s.mu.RLock()
	defer s.mu.RUnlock()
	if cm := s.configMaps[[2]string{namespace, name}].get(); cm != nil {
		return cm, nil
	}
	return nil, apierrors.NewNotFound(schema.GroupResource{Resource: "configmaps"}, name)
}

// Secret returns the Secret namespace/name this node sees, or NotFound.
func (s *Store) Secret(namespace, name string) (*v1.Secret, error) {
	s.mu.RLock()
	defer s.mu.RUnlock()
	if sec := s.secrets[[2]string{namespace, name}].get(); sec != nil {
		return sec, nil
	}
	return nil, apierrors.NewNotFound(schema.GroupResource{Resource: "secrets"}, name)
}

func (s *Store) run(ctx context.Context, bucket string, kv jetstream.KeyValue) {
	defer s.wg.Done()
	backoff := rewatchBase
	for {
		err := s.watch(ctx, bucket, kv)
		if ctx.Err() != nil {
			return
		}
		klog.ErrorS(err, "Watching objects failed, retrying", "bucket", bucket, "backoff", backoff)
		select {
		case <-ctx.Done():
			return
		case <-time.After(backoff):
		}
		backoff = min(backoff*2, rewatchMax)
	}
}

func (s *Store) watch(ctx context.Context, bucket string, kv jetstream.KeyValue) error {
	wctx, cancel := context.WithCancel(ctx)
	defer cancel()
	w, err := kv.WatchFiltered(wctx, []string{wire.ObjectNodeWatch(s.node), wire.ObjectFleetWatch})
	if err != nil {
		return fmt.Errorf("watch %s: %w", bucket, err)
	}
	defer func() {
		_ = w.Stop()
		go func() {
			for range w.Updates() {
			}
		}()
	}()
	seen := map[string]bool{}
	initial := true
	for {
		select {
		case <-ctx.Done():
			return ctx.Err()
		case e, ok := <-w.Updates():
			if !ok {
				return errors.New("watcher closed")
			}
			if e == nil {
				if initial {
					// A re-watch: keys gone while we were away are dropped.
					s.dropUnseen(bucket, seen)
					s.mu.Lock()
					s.ready[bucket] = true
					s.mu.Unlock()
					initial = false
				}
				continue
			}
			if initial {
				seen[e.Key()] = true
			}
			s.apply(bucket, e)
		}
	}
}

// apply records one entry; a bad key or value is logged (never the value)
// and dropped, and the other objects are unaffected.
func (s *Store) apply(bucket string, e jetstream.KeyValueEntry) {
	key, err := wire.ParseObjectKey(e.Key())
	if err != nil || (!key.Fleet && key.Node != s.node) {
		klog.ErrorS(err, "Ignoring object with a bad key", "bucket", bucket, "key", e.Key())
		return
	}
	deleted := e.Operation() != jetstream.KeyValuePut
	var ref Ref
	switch bucket {
	case wire.ConfigMapsBucket:
		var cm *v1.ConfigMap
		if !deleted {
			if cm, err = decodeConfigMap(e.Value(), key); err != nil {
				klog.ErrorS(err, "Ignoring invalid ConfigMap", "key", e.Key(), "revision", e.Revision())
				return
			}
		}
		ref = Ref{Kind: "ConfigMap", Namespace: key.Namespace, Name: key.Name}
		if !setScoped(&s.mu, s.configMaps, key, cm) {
			klog.ErrorS(nil, "Ignoring ConfigMap: the node keeps at most MaxObjects", "key", e.Key(), "max", MaxObjects)
			return
		}
	case wire.SecretsBucket:
		var sec *v1.Secret
		if !deleted {
			if sec, err = decodeSecret(e.Value(), key); err != nil {
				// The error names fields and sizes only, never values.
				klog.ErrorS(err, "Ignoring invalid Secret", "key", e.Key(), "revision", e.Revision())
				return
			}
		}
		ref = Ref{Kind: "Secret", Namespace: key.Namespace, Name: key.Name}
		if !setScoped(&s.mu, s.secrets, key, sec) {
			klog.ErrorS(nil, "Ignoring Secret: the node keeps at most MaxObjects", "key", e.Key(), "max", MaxObjects)
			return
		}
	}
	klog.V(3).InfoS("Object changed", "kind", ref.Kind, "namespace", ref.Namespace, "name", ref.Name, "deleted", deleted, "fleet", key.Fleet)
	s.onChange(ref)
}

// setScoped stores (or, with v nil, removes) the object of key's scope.
// It reports false when a new name would exceed MaxObjects.
func setScoped[T any](mu *sync.RWMutex, m map[[2]string]scoped[T], key wire.DesiredKey, v *T) bool {
	mu.Lock()
	defer mu.Unlock()
	id := [2]string{key.Namespace, key.Name}
	cur, exists := m[id]
	if !exists && v != nil && len(m) >= MaxObjects {
		return false
	}
	if key.Fleet {
		cur.fleet = v
	} else {
		cur.node = v
	}
	if cur.node == nil && cur.fleet == nil {
		delete(m, id)
	} else {
		m[id] = cur
	}
	return true
}

// dropUnseen removes objects whose keys were not in a fresh watch's
// initial values.
func (s *Store) dropUnseen(bucket string, seen map[string]bool) {
	var gone []Ref
	s.mu.Lock()
	check := func(id [2]string, hasNode, hasFleet bool, kind string, clear func(node bool)) {
		if hasNode && !seen[wire.ObjectNodeKey(s.node, id[0], id[1])] {
			clear(true)
			gone = append(gone, Ref{Kind: kind, Namespace: id[0], Name: id[1]})
		}
		if hasFleet && !seen[wire.ObjectFleetKey(id[0], id[1])] {
			clear(false)
			gone = append(gone, Ref{Kind: kind, Namespace: id[0], Name: id[1]})
		}
	}
	switch bucket {
	case wire.ConfigMapsBucket:
		for id, v := range s.configMaps {
			check(id, v.node != nil, v.fleet != nil, "ConfigMap", func(node bool) {
				if node {
					v.node = nil
				} else {
					v.fleet = nil
				}
			})
			if v.node == nil && v.fleet == nil {
				delete(s.configMaps, id)
			} else {
				s.configMaps[id] = v
			}
		}
	case wire.SecretsBucket:
		for id, v := range s.secrets {
			check(id, v.node != nil, v.fleet != nil, "Secret", func(node bool) {
				if node {
					v.node = nil
				} else {
					v.fleet = nil
				}
			})
			if v.node == nil && v.fleet == nil {
				delete(s.secrets, id)
			} else {
				s.secrets[id] = v
			}
		}
	}
	s.mu.Unlock()
	for _, r := range gone {
		s.onChange(r)
	}
}

func decodeConfigMap(data []byte, key wire.DesiredKey) (*v1.ConfigMap, error) {
	if len(data) > wire.MaxObjectValueSize {
		return nil, fmt.Errorf("value is %d bytes, over the limit of %d", len(data), wire.MaxObjectValueSize)
	}
	cm := &v1.ConfigMap{}
	if err := json.Unmarshal(data, cm); err != nil {
		return nil, fmt.Errorf("decode: %w", err)
	}
	if cm.Namespace != key.Namespace || cm.Name != key.Name {
		return nil, fmt.Errorf("object %s/%s stored under the key of %s/%s", cm.Namespace, cm.Name, key.Namespace, key.Name)
	}
	if err := validation.ValidateConfigMap(cm); err != nil {
		return nil, err
	}
	return cm, nil
}

func decodeSecret(data []byte, key wire.DesiredKey) (*v1.Secret, error) {
	if len(data) > wire.MaxObjectValueSize {
		return nil, fmt.Errorf("value is %d bytes, over the limit of %d", len(data), wire.MaxObjectValueSize)
	}
	sec := &v1.Secret{}
	if err := json.Unmarshal(data, sec); err != nil {
		// json errors quote offsets and types, not the data.
		return nil, fmt.Errorf("decode: %w", err)
	}
	if sec.Namespace != key.Namespace || sec.Name != key.Name {
		return nil, fmt.Errorf("object %s/%s stored under the key of %s/%s", sec.Namespace, sec.Name, key.Namespace, key.Name)
	}
	if err := validation.ValidateSecret(sec); err != nil {
		return nil, err
	}
	return sec, nil
}
