package main

import (
	"context"
	"encoding/json"
	"fmt"
	"io"
	"sort"
	"strings"
	"text/tabwriter"

	"github.com/nats-io/nats.go/jetstream"
	v1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/runtime"
	"sigs.k8s.io/yaml"

	"github.com/actorlet/actorlet/messages/wire"
)

func (c *cli) get(ctx context.Context, args []string) error {
	fs := c.flags("get")
	ns := fs.String("n", "", "namespace (default: default)")
	all := fs.Bool("A", false, "all namespaces")
	node := fs.String("node", "", "only pods on this node")
	output := fs.String("o", "", "output: wide, yaml or json")
	watch := fs.Bool("w", false, "after listing, print pods as they change")
	pos, _, err := parse(fs, args)
	if err != nil {
		return err
	}
	what, names, err := resourceArgs(pos)
	if err != nil {
		fmt.Fprintf(c.stderr, "error: %v\n", err)
		fs.Usage()
		return errUsage
	}
	switch *output {
	case "", "wide", "yaml", "json":
	default:
		return fmt.Errorf("-o %q: want wide, yaml or json", *output)
	}
	namespace := func() (string, error) {
		if *all && *ns != "" {
			return "", fmt.Errorf("-A and -n are mutually exclusive")
		}
		if *ns == "" && !*all {
			return "default", nil
		}
		return *ns, nil
	}
	switch what {
	case "pods", "pod", "po":
		namespace, err := namespace()
		if err != nil {
			return err
		}
		return c.getPods(ctx, namespace, *node, *output, *watch, names)
	case "nodes", "node", "no":
		return c.getNodes(ctx, *output, names)
	}
	if kind, ok := objectKind(what); ok {
		namespace, err := namespace()
		if err != nil {
			return err
		}
		return c.getObjects(ctx, kind, namespace, *node, *output, names)
	}
	return fmt.Errorf("unknown resource %q: want pods, nodes, configmaps or secrets", what)
}

// resourceArgs reads get's arguments as kubectl does: a resource and
// optional names ("pods", "pod web db"), or resource/name forms of one
// resource ("pod/web pod/db").
func resourceArgs(pos []string) (what string, names []string, err error) {
	if len(pos) == 0 {
		return "", nil, fmt.Errorf("expected a resource (pods, nodes, configmaps or secrets) and optional names, got nothing")
	}
	if !strings.Contains(pos[0], "/") {
		return pos[0], pos[1:], nil
	}
	for _, p := range pos {
		res, name, ok := strings.Cut(p, "/")
		if !ok || res == "" || name == "" {
			return "", nil, fmt.Errorf("%q: give RESOURCE/NAME for every argument, or RESOURCE NAME...", p)
		}
		if what != "" && res != what {
			return "", nil, fmt.Errorf("%q: one kind of resource at a time (%s and %s)", p, what, res)
		}
		what = res
		names = append(names, name)
	}
	return what, names, nil
}

// nameFilter keeps the names asked for (every name when none were) and
// says which were not found, as kubectl's NotFound errors.
type nameFilter struct {
	resource string
	want     []string
	seen     map[string]bool
}

func newNameFilter(resource string, names []string) *nameFilter {
	return &nameFilter{resource: resource, want: names, seen: map[string]bool{}}
}

// keep reports whether name was asked for, and records it as found.
func (f *nameFilter) keep(name string) bool {
	if len(f.want) == 0 {
		return true
	}
	for _, n := range f.want {
		if n == name {
			f.seen[n] = true
			return true
		}
	}
	return false
}

// single reports whether exactly one name was asked for: kubectl then
// prints the object itself with -o json|yaml, not a List.
func (f *nameFilter) single() bool { return len(f.want) == 1 }

// missing prints kubectl's NotFound line for each name not found and
// returns an error (exit code 1) when there was one.
func (f *nameFilter) missing(c *cli, where string) error {
	n := 0
	for _, name := range f.want {
		if !f.seen[name] {
			fmt.Fprintf(c.stderr, "Error from server (NotFound): %s %q not found%s\n", f.resource, name, where)
			n++
		}
	}
	if n > 0 {
		return exitCodeError{code: 1}
	}
	return nil
}

// printItems prints the objects for -o json|yaml: the one object asked for
// by name, else (no name, several names, or one fleet pod's instances on
// several nodes) a v1.List, as kubectl does.
func printItems(c *cli, output string, f *nameFilter, items []runtime.RawExtension) error {
	if f.single() && len(items) == 0 {
		return nil
	}
	if f.single() && len(items) == 1 {
		if items[0].Object != nil {
			return printObject(c.stdout, output, items[0].Object)
		}
		return printObject(c.stdout, output, json.RawMessage(items[0].Raw))
	}
	return printObject(c.stdout, output, &v1.List{TypeMeta: listMeta, Items: items})
}

// statusFilter is the StatusBucket key filter for a namespace and node
// ("": any); event subjects end in the same three tokens.
func statusFilter(namespace, node string) string {
	n, ns := "*", "*"
	if node != "" {
		n = wire.EncodeName(node)
	}
	if namespace != "" {
		ns = wire.EncodeName(namespace)
	}
	return n + "." + ns + ".*"
}

type podRow struct {
	node string
	pod  *v1.Pod
}

func (c *cli) getPods(ctx context.Context, namespace, node, output string, watch bool, names []string) error {
	filter := newNameFilter("pods", names)
	kv, err := c.bucket(ctx, wire.StatusBucket)
	if err != nil {
		return err
	}
	qctx, cancel := context.WithTimeout(ctx, c.g.timeout)
	if watch {
		cancel()
		qctx, cancel = context.WithCancel(ctx)
	}
	defer cancel()
	es, w, err := entries(qctx, kv, statusFilter(namespace, node), watch)
	if err != nil {
		return err
	}
	var rows []podRow
	for _, e := range es {
		var p v1.Pod
		if !c.decodeOrWarn(e, &p) || !filter.keep(p.Name) {
			continue
		}
		rows = append(rows, podRow{node: wire.DecodeName(firstToken(e.Key())), pod: &p})
	}
	sort.Slice(rows, func(i, j int) bool {
		a, b := rows[i].pod, rows[j].pod
		if a.Namespace != b.Namespace {
			return a.Namespace < b.Namespace
		}
		if a.Name != b.Name {
			return a.Name < b.Name
		}
		return rows[i].node < rows[j].node
	})
	allNS := namespace == ""
	switch output {
	case "json", "yaml":
		items := make([]runtime.RawExtension, 0, len(rows))
		for _, r := range rows {
			items = append(items, runtime.RawExtension{Object: r.pod})
		}
		if err := printItems(c, output, filter, items); err != nil {
			return err
		}
	default:
		if len(rows) == 0 && !watch && len(names) > 0 {
			break
		}
		if len(rows) == 0 && !watch {
			if allNS {
				fmt.Fprintln(c.stderr, "No resources found")
			} else {
				fmt.Fprintf(c.stderr, "No resources found in %s namespace.\n", namespace)
			}
			return nil
		}
		tw := newTable(c.stdout)
		fmt.Fprintln(tw, podHeader(allNS, output == "wide"))
		for _, r := range rows {
			fmt.Fprintln(tw, c.podLine(r, allNS, output == "wide"))
		}
		tw.Flush()
	}
	where := fmt.Sprintf(" in namespace %q", namespace)
	if namespace == "" {
		where = ""
	}
	if err := filter.missing(c, where); err != nil || !watch {
		if w != nil {
			_ = w.Stop()
		}
		return err
	}
	defer func() { _ = w.Stop() }()
	for {
		select {
		case <-ctx.Done():
			return nil
		case e, ok := <-w.Updates():
			if !ok {
				return nil
			}
			if e == nil {
				continue
			}
			if len(names) > 0 && !filter.keep(wire.DecodeName(lastToken(e.Key()))) {
				continue
			}
			if err := c.printPodChange(e, allNS, output); err != nil {
				return err
			}
		}
	}
}

var listMeta = metav1.TypeMeta{Kind: "List", APIVersion: "v1"}

func (c *cli) printPodChange(e jetstream.KeyValueEntry, allNS bool, output string) error {
	r := podRow{node: wire.DecodeName(firstToken(e.Key()))}
	if e.Operation() != jetstream.KeyValuePut {
		parts := strings.SplitN(e.Key(), ".", 3)
		if len(parts) != 3 {
			return nil
		}
		r.pod = &v1.Pod{}
		r.pod.Namespace, r.pod.Name, r.pod.Status.Phase = wire.DecodeName(parts[1]), wire.DecodeName(parts[2]), "Deleted"
	} else {
		var p v1.Pod
		if !c.decodeOrWarn(e, &p) {
			return nil
		}
		r.pod = &p
	}
	if output == "json" || output == "yaml" {
		return printObject(c.stdout, output, r.pod)
	}
	tw := newTable(c.stdout)
	fmt.Fprintln(tw, c.podLine(r, allNS, output == "wide"))
	return tw.Flush()
}

func podHeader(allNS, wide bool) string {
	h := "NAME\tREADY\tSTATUS\tRESTARTS\tAGE"
	if allNS {
		h = "NAMESPACE\t" + h
	}
	if wide {
		h += "\tIP\tNODE"
	}
	return h
}

func (c *cli) podLine(r podRow, allNS, wide bool) string {
	p, now := r.pod, c.clock.Now()
	start := p.CreationTimestamp.Time
	if start.IsZero() && p.Status.StartTime != nil {
		start = p.Status.StartTime.Time
	}
	reason := podReason(p)
	if p.Status.Phase == "Deleted" {
		reason = "Deleted"
	}
	l := strings.Join([]string{p.Name, podReady(p), reason, podRestarts(p, now), age(start, now)}, "\t")
	if allNS {
		l = p.Namespace + "\t" + l
	}
	if wide {
		l += "\t" + orElse(p.Status.PodIP, "<none>") + "\t" + r.node
	}
	return l
}

func (c *cli) getNodes(ctx context.Context, output string, names []string) error {
	filter := newNameFilter("nodes", names)
	es, err := c.all(ctx, wire.NodesBucket)
	if err != nil {
		return err
	}
	var nodes []*v1.Node
	for _, e := range es {
		var n v1.Node
		if !c.decodeOrWarn(e, &n) || !filter.keep(n.Name) {
			continue
		}
		nodes = append(nodes, &n)
	}
	sort.Slice(nodes, func(i, j int) bool { return nodes[i].Name < nodes[j].Name })
	if output == "json" || output == "yaml" {
		items := make([]runtime.RawExtension, 0, len(nodes))
		for _, n := range nodes {
			items = append(items, runtime.RawExtension{Object: n})
		}
		if err := printItems(c, output, filter, items); err != nil {
			return err
		}
		return filter.missing(c, "")
	}
	if len(nodes) == 0 {
		if len(names) > 0 {
			return filter.missing(c, "")
		}
		fmt.Fprintln(c.stderr, "No resources found")
		return nil
	}
	now := c.clock.Now()
	tw := newTable(c.stdout)
	h := "NAME\tSTATUS\tAGE\tVERSION"
	if output == "wide" {
		h += "\tINTERNAL-IP\tOS-IMAGE\tCONTAINER-RUNTIME"
	}
	fmt.Fprintln(tw, h)
	for _, n := range nodes {
		status := "NotReady"
		if ok, _ := wire.NodeReady(n, now, wire.HeartbeatPeriod(n, wire.DefaultHeartbeatPeriod)); ok {
			status = "Ready"
		}
		if n.Spec.Unschedulable {
			status += ",SchedulingDisabled"
		}
		l := strings.Join([]string{n.Name, status, age(n.CreationTimestamp.Time, now), orElse(n.Status.NodeInfo.KubeletVersion, "<none>")}, "\t")
		if output == "wide" {
			ip := "<none>"
			for _, a := range n.Status.Addresses {
				if a.Type == v1.NodeInternalIP {
					ip = a.Address
					break
				}
			}
			l += "\t" + ip + "\t" + orElse(n.Status.NodeInfo.OSImage, "<unknown>") + "\t" + orElse(n.Status.NodeInfo.ContainerRuntimeVersion, "<unknown>")
		}
		fmt.Fprintln(tw, l)
	}
	if err := tw.Flush(); err != nil {
		return err
	}
	return filter.missing(c, "")
}

// lastToken is the part of a key after its last dot.
func lastToken(key string) string {
	return key[strings.LastIndexByte(key, '.')+1:]
}

func newTable(w io.Writer) *tabwriter.Writer { return tabwriter.NewWriter(w, 0, 8, 3, ' ', 0) }

// printObject prints v as indented JSON or YAML.
func printObject(w io.Writer, format string, v any) error {
	data, err := json.MarshalIndent(v, "", "    ")
	if err != nil {
		return fmt.Errorf("encode output: %w", err)
	}
	if format == "yaml" {
		if data, err = yaml.JSONToYAML(data); err != nil {
			return fmt.Errorf("encode output: %w", err)
		}
		_, err = w.Write(data)
		return err
	}
	_, err = fmt.Fprintf(w, "%s\n", data)
	return err
}
