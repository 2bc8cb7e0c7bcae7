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
	what, err := oneName(fs, pos, "resource (pods, nodes, configmaps or secrets)")
	if err != nil {
		return err
	}
	switch *output {
	case "", "wide", "yaml", "json":
	default:
		return fmt.Errorf("-o %q: want wide, yaml or json", *output)
	}
	switch what {
	case "pods", "pod", "po":
		if *all && *ns != "" {
			return fmt.Errorf("-A and -n are mutually exclusive")
		}
		namespace := *ns
		if namespace == "" && !*all {
			namespace = "default"
		}
		return c.getPods(ctx, namespace, *node, *output, *watch)
	case "nodes", "node", "no":
		return c.getNodes(ctx, *output)
	}
	if kind, ok := objectKind(what); ok {
		if *all && *ns != "" {
			return fmt.Errorf("-A and -n are mutually exclusive")
		}
		namespace := *ns
		if namespace == "" && !*all {
			namespace = "default"
		}
		return c.getObjects(ctx, kind, namespace, *node, *output)
	}
	return fmt.Errorf("unknown resource %q: want pods, nodes, configmaps or secrets", what)
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

func (c *cli) getPods(ctx context.Context, namespace, node, output string, watch bool) error {
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
		if err := decodeEntry(e, &p); err != nil {
			fmt.Fprintf(c.stderr, "warning: %v\n", err)
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
		if err := printObject(c.stdout, output, &v1.List{TypeMeta: listMeta, Items: items}); err != nil {
			return err
		}
	default:
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
	if !watch {
		return nil
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
		if err := decodeEntry(e, &p); err != nil {
			fmt.Fprintf(c.stderr, "warning: %v\n", err)
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

func (c *cli) getNodes(ctx context.Context, output string) error {
	es, err := c.all(ctx, wire.NodesBucket)
	if err != nil {
		return err
	}
	var nodes []*v1.Node
	for _, e := range es {
		var n v1.Node
		if err := decodeEntry(e, &n); err != nil {
			fmt.Fprintf(c.stderr, "warning: %v\n", err)
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
		return printObject(c.stdout, output, &v1.List{TypeMeta: listMeta, Items: items})
	}
	if len(nodes) == 0 {
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
	return tw.Flush()
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
