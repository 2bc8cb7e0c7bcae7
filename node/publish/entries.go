package publish

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"sort"
	"strings"
	"time"

	"github.com/nats-io/nats.go/jetstream"
	v1 "k8s.io/api/core/v1"
	"k8s.io/klog/v2"

	"github.com/actorlet/actorlet/bus"
	"github.com/actorlet/actorlet/messages"
	"github.com/actorlet/actorlet/messages/podrules"
	"github.com/actorlet/actorlet/messages/wire"
)

// The StatusPublisher is the one owner of this node's entries in the status
// bucket. Besides the status actor's changes (PodStatusChanged,
// PodStatusRemoved, queued) it answers the pod sources, which know which
// pods they still want but not how entries are kept:
//
//   - WriteNow / DeleteIf: a source's own entries (the remote source's
//     FailedValidation status of a rejected key), written at once;
//   - Read: the last status published for a pod, which the remote source
//     gives a pod it sees first (the API server's copy of the status: a
//     terminal phase survives an agent restart);
//   - PruneStale: once a source has delivered its first state, the entries
//     of its pods that are no longer wanted (left by an earlier run);
//   - FinalizeWith: when a published status shows a gracefully deleted remote
//     pod terminated, the desired entry is deleted, as the kubelet's status
//     manager deletes such a pod from the API server.

const (
	// entryTimeout bounds one synchronous read or write of an entry.
	entryTimeout = 5 * time.Second
	// pruneTimeout bounds a whole prune.
	pruneTimeout = 10 * time.Second
	// finalizeTimeout bounds one finalization.
	finalizeTimeout = 10 * time.Second
)

// Refs names pods for PruneStale.
func Refs(pods []*v1.Pod) []wire.PodRef {
	refs := make([]wire.PodRef, 0, len(pods))
	for _, p := range pods {
		refs = append(refs, wire.PodRef{Namespace: p.Namespace, Name: p.Name})
	}
	return refs
}

// WriteNow writes pod (with its status) as its status entry and on its
// status subject at once, outside the queue: for a source's own entries.
func (p *StatusPublisher) WriteNow(ctx context.Context, pod *v1.Pod) error {
	data, err := json.Marshal(pod)
	if err != nil {
		return fmt.Errorf("encode status of %s/%s: %w", pod.Namespace, pod.Name, err)
	}
	ctx, cancel := context.WithTimeout(ctx, entryTimeout)
	defer cancel()
	kv, err := p.bucket(ctx)
	if err != nil {
		return err
	}
	key := wire.StatusKey(p.node, pod.Namespace, pod.Name)
	if _, err := kv.Put(ctx, key, data); err != nil {
		return fmt.Errorf("put status %q: %w", key, err)
	}
	subject := wire.StatusSubject(p.node, pod.Namespace, pod.Name)
	if err := p.js.Conn().Publish(subject, data); err != nil {
		return fmt.Errorf("publish status on %q: %w", subject, err)
	}
	return nil
}

// Read returns the pod stored in the status entry of namespace/name (its
// last published status), nil when there is none. The entry was written by
// this node, and its size is bounded by the bucket's value limit.
func (p *StatusPublisher) Read(ctx context.Context, namespace, name string) (*v1.Pod, error) {
	ctx, cancel := context.WithTimeout(ctx, entryTimeout)
	defer cancel()
	kv, err := p.bucket(ctx)
	if err != nil {
		return nil, err
	}
	pod, _, err := readEntry(ctx, kv, wire.StatusKey(p.node, namespace, name))
	return pod, err
}

// readEntry reads the pod stored at key and the entry's revision; nil and
// no error when there is none.
func readEntry(ctx context.Context, kv jetstream.KeyValue, key string) (*v1.Pod, uint64, error) {
	e, err := kv.Get(ctx, key)
	if errors.Is(err, jetstream.ErrKeyNotFound) {
		return nil, 0, nil
	}
	if err != nil {
		return nil, 0, fmt.Errorf("read status %q: %w", key, err)
	}
	var pod v1.Pod
	if err := json.Unmarshal(e.Value(), &pod); err != nil {
		return nil, 0, fmt.Errorf("decode status %q: %w", key, err)
	}
	return &pod, e.Revision(), nil
}

// DeleteIf deletes the status entry of namespace/name if the pod stored
// there satisfies match. The delete is conditional on the revision read, so
// a status written in between is kept. It reports whether it deleted.
func (p *StatusPublisher) DeleteIf(ctx context.Context, namespace, name string, match func(*v1.Pod) bool) bool {
	ctx, cancel := context.WithTimeout(ctx, entryTimeout)
	defer cancel()
	kv, err := p.bucket(ctx)
	if err != nil {
		klog.ErrorS(err, "Cannot open the status bucket")
		return false
	}
	deleted, _ := deleteIf(ctx, kv, wire.StatusKey(p.node, namespace, name), 0, match)
	return deleted
}

// deleteIf is DeleteIf of key; the error (logged here) says the entry
// could not be read or deleted, so it may still hold a pod that matches.
func deleteIf(ctx context.Context, kv jetstream.KeyValue, key string, maxRev uint64, match func(*v1.Pod) bool) (bool, error) {
	pod, rev, err := readEntry(ctx, kv, key)
	if err != nil {
		klog.ErrorS(err, "Reading pod status failed", "statusKey", key)
		return false, err
	}
	if pod == nil || !match(pod) {
		return false, nil
	}
	if maxRev > 0 && rev > maxRev {
		return false, nil // written after the caller's listing began
	}
	err = kv.Delete(ctx, key, jetstream.LastRevision(rev))
	if errors.Is(err, jetstream.ErrKeyRevisionMismatch) {
		return false, nil // written meanwhile: not the entry that matched
	}
	if err != nil {
		klog.ErrorS(err, "Deleting a pod status failed", "statusKey", key)
		return false, err
	}
	return true, nil
}

// PruneStale deletes the status entries of this node's pods from source
// that are not in keep: left by an earlier run of the agent for pods
// removed while it was away, which nothing in this run would ever touch.
// Entries of other sources are kept, and each delete is conditional on the
// revision read, so a status written meanwhile survives. A source calls it
// once it has delivered its first state. It reports whether the prune is
// complete: every entry of the node was listed and each stale one looked
// at and, if it was source's, deleted (or found rewritten meanwhile); on
// false (logged) entries of an earlier run may be left.
func (p *StatusPublisher) PruneStale(ctx context.Context, source string, keep []wire.PodRef) bool {
	ctx, cancel := context.WithTimeout(ctx, pruneTimeout)
	defer cancel()
	kv, err := p.bucket(ctx)
	if err != nil {
		klog.ErrorS(err, "Cannot prune pod statuses", "source", source)
		return false
	}
	// A status written after this point is this run's (a pod of source
	// that started since keep was taken), never stale: only entries at or
	// below the bucket's last revision now are pruned.
	st, err := kv.Status(ctx)
	if err != nil {
		klog.ErrorS(err, "Cannot prune pod statuses", "source", source)
		return false
	}
	bs, ok := st.(*jetstream.KeyValueBucketStatus)
	if !ok {
		klog.ErrorS(nil, "Cannot prune pod statuses: the bucket status has no stream state", "source", source)
		return false
	}
	floor := bs.StreamInfo().State.LastSeq
	kept := make(map[string]bool, len(keep))
	for _, r := range keep {
		kept[wire.StatusKey(p.node, r.Namespace, r.Name)] = true
	}
	// Listed through the node's status consumer: a node may not create
	// consumers (docs/security.md).
	keys, err := bus.ConsumerKeys(ctx, p.js, wire.StatusBucket, wire.NodeStatusConsumer(p.node))
	if err != nil {
		klog.ErrorS(err, "Listing pod statuses to prune failed", "node", p.node, "source", source)
		return false
	}
	var stale []string
	for _, key := range keys {
		if !kept[key] && strings.Count(key, ".") == 2 {
			stale = append(stale, key)
		}
	}
	sort.Strings(stale)
	ofSource := func(pod *v1.Pod) bool { return pod.Annotations[messages.ConfigSourceAnnotation] == source }
	complete := true
	for _, key := range stale {
		deleted, err := deleteIf(ctx, kv, key, max(floor, 1), ofSource)
		if deleted {
			klog.InfoS("Pruned the status of a pod no longer desired", "statusKey", key, "source", source)
		}
		complete = complete && err == nil
	}
	return complete
}

// bucket is the status bucket for a synchronous call, opened on first use
// (the writer goroutine keeps its own handle).
func (p *StatusPublisher) bucket(ctx context.Context) (jetstream.KeyValue, error) {
	p.syncMu.Lock()
	defer p.syncMu.Unlock()
	if p.syncKV != nil {
		return p.syncKV, nil
	}
	kv, err := p.js.KeyValue(ctx, wire.StatusBucket)
	if err != nil {
		return nil, fmt.Errorf("open bucket %s: %w", wire.StatusBucket, err)
	}
	p.syncKV = kv
	return kv, nil
}

// FinalizeWith sets how a gracefully deleted remote pod is finalized once
// its published status shows it terminated (the remote source's Finalize,
// which deletes the desired entry). Until it is set nothing is finalized.
func (p *StatusPublisher) FinalizeWith(f func(context.Context, *v1.Pod) error) {
	p.finalizeMu.Lock()
	defer p.finalizeMu.Unlock()
	p.finalize = f
}

// maybeFinalize finalizes pod in the background if it is a remote pod being
// deleted whose containers have all stopped.
func (p *StatusPublisher) maybeFinalize(pod *v1.Pod) {
	if pod.DeletionTimestamp == nil || pod.Annotations[messages.ConfigSourceAnnotation] != messages.SourceRemote || !terminated(pod) {
		return
	}
	p.finalizeMu.Lock()
	f := p.finalize
	p.finalizeMu.Unlock()
	if f == nil {
		return
	}
	go func() {
		ctx, cancel := context.WithTimeout(context.Background(), finalizeTimeout)
		defer cancel()
		if err := f(ctx, pod); err != nil {
			klog.ErrorS(err, "Failed to finalize deleted pod", "pod", klog.KObj(pod))
		}
	}()
}

// terminated reports whether no container of pod is running or about to.
func terminated(pod *v1.Pod) bool {
	if podrules.IsTerminal(pod.Status.Phase) {
		return true
	}
	for _, cs := range append(pod.Status.InitContainerStatuses, pod.Status.ContainerStatuses...) {
		if cs.State.Terminated == nil {
			return false
		}
	}
	return len(pod.Status.ContainerStatuses) > 0
}
