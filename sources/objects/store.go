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
	"sync"
	"time"

	"github.com/nats-io/nats.go/jetstream"
	v1 "k8s.io/api/core/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	"k8s.io/apimachinery/pkg/runtime/schema"
	"k8s.io/klog/v2"

	"github.com/actorlet/actorlet/bus"
	"github.com/actorlet/actorlet/messages/validation"
	"github.com/actorlet/actorlet/messages/wire"
)

// Limits.
const (
	// MaxObjects bounds how many objects of each kind a node keeps.
	MaxObjects = 10000
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

// Start watches both buckets for node, through the node's own consumer
// on each (busauth.NodeObjectConsumers: node.<node>.> and fleet.>), reset
// to the start on every (re)watch, as the desired pods are read: nodes may
// not create consumers (docs/security.md). A bucket or consumer that is not
// there yet is waited for (logged once), never an error here. onChange
// (may be nil) is called, from the watch goroutines, for every object that
// changed or went away.
func Start(ctx context.Context, conn bus.Client, node string, onChange func(Ref)) (*Store, error) {
	if onChange == nil {
		onChange = func(Ref) {}
	}
	if conn == nil || conn.JetStream() == nil {
		return nil, errors.New("objects: no bus connection")
	}
	s := &Store{node: node, onChange: onChange, configMaps: map[[2]string]scoped[v1.ConfigMap]{},
		secrets: map[[2]string]scoped[v1.Secret]{}, ready: map[string]bool{}}
	runCtx, cancel := context.WithCancel(context.Background())
	s.cancel = cancel
	for _, b := range []string{wire.ConfigMapsBucket, wire.SecretsBucket} {
		resync := make(chan struct{}, 1)
		unregister := conn.OnReconnect(func() {
			select {
			case resync <- struct{}{}:
			default:
			}
		})
		s.wg.Add(1)
		go func() {
			defer unregister()
			s.run(runCtx, conn.JetStream(), b, resync)
		}()
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

// errResync ends a watch after a reconnect: the consumer is reset and read
// again from the start.
var errResync = errors.New("reconnected")

func (s *Store) run(ctx context.Context, js jetstream.JetStream, bucket string, resync chan struct{}) {
	defer s.wg.Done()
	var backoff bus.Backoff
	logged := false // one log line per outage, not one per retry
	for {
		synced, err := s.watch(ctx, js, bucket, resync)
		if ctx.Err() != nil {
			return
		}
		if synced {
			backoff.Reset()
			logged = false
		}
		if errors.Is(err, errResync) {
			klog.V(2).InfoS("Re-reading objects after reconnect", "bucket", bucket)
			continue
		}
		if !logged {
			klog.ErrorS(err, "Reading objects failed, retrying until it works (pods using them wait)", "bucket", bucket, "node", s.node)
			logged = true
		} else {
			klog.V(4).InfoS("Reading objects failed again", "bucket", bucket, "err", err)
		}
		select {
		case <-ctx.Done():
			return
		case <-resync:
		case <-time.After(backoff.Next()):
		}
	}
}

// watch reads bucket through the node's consumer until it fails, a
// reconnect asks for a fresh read, or ctx ends. synced says whether the
// stored entries were all applied.
func (s *Store) watch(ctx context.Context, js jetstream.JetStream, bucket string, resync chan struct{}) (synced bool, err error) {
	select { // a fresh read makes a pending resync moot
	case <-resync:
	default:
	}
	wctx, cancel := context.WithCancel(ctx)
	defer cancel()
	consumer := wire.NodeObjectConsumer(s.node)
	w, err := bus.WatchConsumer(wctx, js, bucket, consumer)
	if err != nil {
		return false, fmt.Errorf("read %s through consumer %s: %w", bucket, consumer, err)
	}
	defer w.Stop()
	// The consumer delivers every stored entry (older revisions too, in
	// order): the latest per key wins, as in a KV watch.
	seen := map[string]bool{}
	initial := true
	for {
		select {
		case <-ctx.Done():
			return !initial, ctx.Err()
		case <-resync:
			return !initial, errResync
		case e, ok := <-w.Updates():
			if !ok {
				if err := w.Err(); err != nil {
					return !initial, fmt.Errorf("consumer read ended: %w", err)
				}
				return !initial, errors.New("consumer read ended")
			}
			if e == nil {
				if initial {
					// A re-read: keys gone while we were away are dropped.
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
		if old := getScoped(&s.mu, s.configMaps, key); cm != nil && old != nil {
			if err := validation.ValidateConfigMapUpdate(cm, old); err != nil {
				klog.ErrorS(err, "Ignoring a change of an immutable ConfigMap written around actorletctl; the node keeps the stored one", "key", e.Key(), "revision", e.Revision())
				return
			}
		}
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
		if old := getScoped(&s.mu, s.secrets, key); sec != nil && old != nil {
			if err := validation.ValidateSecretUpdate(sec, old); err != nil {
				// The error names fields only, never values.
				klog.ErrorS(err, "Ignoring a change of an immutable Secret written around actorletctl; the node keeps the stored one", "key", e.Key(), "revision", e.Revision())
				return
			}
		}
		if !setScoped(&s.mu, s.secrets, key, sec) {
			klog.ErrorS(nil, "Ignoring Secret: the node keeps at most MaxObjects", "key", e.Key(), "max", MaxObjects)
			return
		}
	}
	klog.V(3).InfoS("Object changed", "kind", ref.Kind, "namespace", ref.Namespace, "name", ref.Name, "deleted", deleted, "fleet", key.Fleet)
	s.onChange(ref)
}

// getScoped is the object stored for key's scope, nil when none.
func getScoped[T any](mu *sync.RWMutex, m map[[2]string]scoped[T], key wire.DesiredKey) *T {
	mu.RLock()
	defer mu.RUnlock()
	cur := m[[2]string{key.Namespace, key.Name}]
	if key.Fleet {
		return cur.fleet
	}
	return cur.node
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
