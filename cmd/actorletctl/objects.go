package main

import (
	"bytes"
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"sort"
	"strconv"
	"strings"
	"text/tabwriter"

	"github.com/nats-io/nats.go/jetstream"
	v1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/runtime"

	"github.com/actorlet/actorlet/messages/validation"
	"github.com/actorlet/actorlet/messages/wire"
)

// object is a ConfigMap or Secret read from a manifest.
type object struct {
	kind      string // "ConfigMap" or "Secret"
	configMap *v1.ConfigMap
	secret    *v1.Secret
}

func (o *object) meta() *metav1.ObjectMeta {
	if o.configMap != nil {
		return &o.configMap.ObjectMeta
	}
	return &o.secret.ObjectMeta
}

func (o *object) value() any {
	if o.configMap != nil {
		return o.configMap
	}
	return o.secret
}

// validateUpdate refuses what the API server refuses on an update of the
// stored object (prev, JSON): a changed immutable ConfigMap or Secret, a
// Secret's type. A stored value that does not decode is replaced.
func (o *object) validateUpdate(prev []byte) error {
	if o.configMap != nil {
		var old v1.ConfigMap
		if json.Unmarshal(prev, &old) != nil {
			return nil
		}
		return validation.ValidateConfigMapUpdate(o.configMap, &old)
	}
	var old v1.Secret
	if json.Unmarshal(prev, &old) != nil {
		return nil
	}
	return validation.ValidateSecretUpdate(o.secret, &old)
}

// objectKey is where an object lives: readable by node only, or (node
// empty) by every node.
func objectKey(node, namespace, name string) string {
	if node != "" {
		return wire.ObjectNodeKey(node, namespace, name)
	}
	return wire.ObjectFleetKey(namespace, name)
}

// applyObject writes a ConfigMap or Secret, keeping the UID and creation
// time of the one already there. The value is never printed.
func (c *cli) applyObject(ctx context.Context, o *object, node string) (string, error) {
	bucket, err := wire.ObjectBucket(o.kind)
	if err != nil {
		return "", err
	}
	kv, err := c.bucket(ctx, bucket)
	if err != nil {
		return "", err
	}
	meta := o.meta()
	key := objectKey(node, meta.Namespace, meta.Name)
	qctx, cancel := context.WithTimeout(ctx, c.g.timeout)
	defer cancel()
	old, verb, err := c.previous(qctx, kv, key, meta)
	if err != nil {
		return "", err
	}
	if old != nil {
		if err := o.validateUpdate(old.Value()); err != nil {
			return "", err
		}
	}
	data, err := json.Marshal(o.value())
	if err != nil {
		return "", fmt.Errorf("encode %s: %w", o.kind, err)
	}
	if len(data) > wire.MaxObjectValueSize {
		return "", fmt.Errorf("%s %s/%s is %d bytes encoded, over the bus limit of %d bytes", o.kind, meta.Namespace, meta.Name, len(data), wire.MaxObjectValueSize)
	}
	if cn, err := c.connect(ctx); err == nil && cn.nc != nil && int64(len(data)) > cn.nc.MaxPayload()-1024 {
		return "", fmt.Errorf("%s %s/%s is %d bytes encoded, over the NATS server's max_payload of %d bytes (raise max_payload to store objects up to 1 MiB)",
			o.kind, meta.Namespace, meta.Name, len(data), cn.nc.MaxPayload())
	}
	if node == "" {
		c.warnShadowed(qctx, kv, o.kind, meta.Namespace, meta.Name)
	}
	if old != nil && bytes.Equal(old.Value(), data) {
		return "unchanged", nil
	}
	if _, err := kv.Put(qctx, key, data); err != nil {
		return "", fmt.Errorf("write %s key %q: %w", bucket, key, err)
	}
	return verb, nil
}

// warnShadowed says when node-scoped copies of a fleet object exist: on
// those nodes they win over the fleet one being written.
func (c *cli) warnShadowed(ctx context.Context, kv jetstream.KeyValue, kind, namespace, name string) {
	es, _, err := entries(ctx, kv, "node.*."+wire.EncodeName(namespace)+"."+wire.EncodeName(name), false)
	if err != nil || len(es) == 0 {
		return
	}
	var nodes []string
	for _, e := range es {
		if k, err := wire.ParseObjectKey(e.Key()); err == nil {
			nodes = append(nodes, k.Node)
		}
	}
	fmt.Fprintf(c.stderr, "warning: %s %s/%s also exists for node(s) %s (applied with --node); there that copy is used, not this fleet-wide one\n",
		strings.ToLower(kind), namespace, name, strings.Join(nodes, ", "))
}

// objectKind maps the resource names kubectl accepts to a kind.
func objectKind(resource string) (string, bool) {
	switch strings.ToLower(resource) {
	case "configmaps", "configmap", "cm":
		return "ConfigMap", true
	case "secrets", "secret":
		return "Secret", true
	}
	return "", false
}

// objectRow is one listed object.
type objectRow struct {
	scope string // node name or "fleet"
	meta  metav1.ObjectMeta
	data  int
	typ   string
	raw   []byte
}

// getObjects lists ConfigMaps or Secrets of a namespace ("" = all). A
// Secret's values are never printed by the table; -o yaml/json prints the
// object as stored, as kubectl does.
func (c *cli) getObjects(ctx context.Context, kind, namespace, node, output string, names []string) error {
	filter := newNameFilter(strings.ToLower(kind)+"s", names)
	bucket, err := wire.ObjectBucket(kind)
	if err != nil {
		return err
	}
	es, err := c.all(ctx, bucket)
	if err != nil {
		return err
	}
	var rows []objectRow
	for _, e := range es {
		k, err := wire.ParseObjectKey(e.Key())
		if err != nil || (namespace != "" && k.Namespace != namespace) || (node != "" && !k.Fleet && k.Node != node) {
			continue
		}
		r := objectRow{scope: "fleet", raw: e.Value()}
		if !k.Fleet {
			r.scope = k.Node
		}
		switch kind {
		case "ConfigMap":
			var cm v1.ConfigMap
			if json.Unmarshal(e.Value(), &cm) != nil {
				continue
			}
			r.meta, r.data = cm.ObjectMeta, len(cm.Data)+len(cm.BinaryData)
		default:
			var s v1.Secret
			if json.Unmarshal(e.Value(), &s) != nil {
				continue
			}
			r.meta, r.data, r.typ = s.ObjectMeta, len(s.Data), string(s.Type)
		}
		if !filter.keep(r.meta.Name) {
			continue
		}
		rows = append(rows, r)
	}
	sort.Slice(rows, func(i, j int) bool {
		a, b := rows[i], rows[j]
		if a.meta.Namespace != b.meta.Namespace {
			return a.meta.Namespace < b.meta.Namespace
		}
		if a.meta.Name != b.meta.Name {
			return a.meta.Name < b.meta.Name
		}
		return a.scope < b.scope
	})
	where := fmt.Sprintf(" in namespace %q", namespace)
	if namespace == "" {
		where = ""
	}
	switch output {
	case "json", "yaml":
		items := make([]runtime.RawExtension, 0, len(rows))
		for _, r := range rows {
			items = append(items, runtime.RawExtension{Raw: withTypeMeta(r.raw, kind)})
		}
		if err := printItems(c, output, filter, items); err != nil {
			return err
		}
		return filter.missing(c, where)
	}
	if len(rows) == 0 {
		if len(names) > 0 {
			return filter.missing(c, where)
		}
		fmt.Fprintf(c.stderr, "No %ss found.\n", strings.ToLower(kind))
		return nil
	}
	w := tabwriter.NewWriter(c.stdout, 0, 8, 3, ' ', 0)
	now := c.clock.Now()
	header := "NAME\tDATA\tSCOPE\tAGE"
	if kind == "Secret" {
		header = "NAME\tTYPE\tDATA\tSCOPE\tAGE"
	}
	if namespace == "" {
		header = "NAMESPACE\t" + header
	}
	fmt.Fprintln(w, header)
	for _, r := range rows {
		cols := []string{r.meta.Name}
		if kind == "Secret" {
			cols = append(cols, r.typ)
		}
		cols = append(cols, fmt.Sprint(r.data), r.scope, age(r.meta.CreationTimestamp.Time, now))
		if namespace == "" {
			cols = append([]string{r.meta.Namespace}, cols...)
		}
		fmt.Fprintln(w, strings.Join(cols, "\t"))
	}
	if err := w.Flush(); err != nil {
		return err
	}
	return filter.missing(c, where)
}

// withTypeMeta is a stored object's JSON with apiVersion v1 and its kind
// set, so a List's items say what they are; raw is returned as it is when
// it is not an object.
func withTypeMeta(raw []byte, kind string) []byte {
	var m map[string]json.RawMessage
	if json.Unmarshal(raw, &m) != nil || m == nil {
		return raw
	}
	m["apiVersion"], m["kind"] = json.RawMessage(`"v1"`), json.RawMessage(strconv.Quote(kind))
	out, err := json.Marshal(m)
	if err != nil {
		return raw
	}
	return out
}

// deleteObject removes a ConfigMap or Secret from its scope. Without
// --node it is the fleet-wide one, or else the only node-scoped one (as
// delete finds a pod applied with --node).
func (c *cli) deleteObject(ctx context.Context, kind, namespace, name, node string) error {
	bucket, err := wire.ObjectBucket(kind)
	if err != nil {
		return err
	}
	kv, err := c.bucket(ctx, bucket)
	if err != nil {
		return err
	}
	qctx, cancel := context.WithTimeout(ctx, c.g.timeout)
	defer cancel()
	key := objectKey(node, namespace, name)
	_, err = kv.Get(qctx, key)
	if errors.Is(err, jetstream.ErrKeyNotFound) && node == "" {
		es, _, lerr := entries(qctx, kv, "node.*."+wire.EncodeName(namespace)+"."+wire.EncodeName(name), false)
		switch {
		case lerr != nil:
			return lerr
		case len(es) == 1:
			key, err = es[0].Key(), nil
		case len(es) > 1:
			var nodes []string
			for _, e := range es {
				if k, perr := wire.ParseObjectKey(e.Key()); perr == nil {
					nodes = append(nodes, k.Node)
				}
			}
			return fmt.Errorf("%s %q exists for several nodes (%s) and not fleet-wide: choose one with --node", strings.ToLower(kind), name, strings.Join(nodes, ", "))
		}
	}
	if errors.Is(err, jetstream.ErrKeyNotFound) {
		scope := "fleet-wide or for any node"
		if node != "" {
			scope = "on node " + node
		}
		return fmt.Errorf("%s %q not found in namespace %q (%s)", strings.ToLower(kind), name, namespace, scope)
	} else if err != nil {
		return fmt.Errorf("read %s key %q: %w", bucket, key, err)
	}
	if err := kv.Delete(qctx, key); err != nil {
		return fmt.Errorf("delete %s key %q: %w", bucket, key, err)
	}
	fmt.Fprintf(c.stdout, "%s %q deleted\n", strings.ToLower(kind), name)
	return nil
}
