package main

import (
	"context"
	"fmt"
	"strings"
	"text/tabwriter"

	"github.com/actorlet/actorlet/messages/wire"
)

// bootstrap creates the protocol's buckets and stream with the operator's
// replicas and placement, or brings existing ones to them. It is run once
// per fleet by someone allowed to create and edit streams; agents only
// create what is missing and never change what exists.
func (c *cli) bootstrap(ctx context.Context, args []string) error {
	fs := c.flags("bootstrap")
	replicas := fs.Int("replicas", 1, fmt.Sprintf("copies of each bucket and the stream (1..%d; 3 on a 3-server cluster)", wire.MaxReplicas))
	cluster := fs.String("placement-cluster", "", "NATS cluster to place them on")
	tags := fs.String("placement-tags", "", "server tags to place them by, t1,t2")
	edges := fs.String("edge-nodes", "", "edge nodes (run with --nats-leaf-url) whose status, heartbeats and events the hub sources, n1,n2 (the full list each time)")
	pos, _, err := parse(fs, args)
	if err != nil {
		return err
	}
	if len(pos) != 0 {
		fmt.Fprintf(c.stderr, "error: bootstrap takes no arguments, got %q\n", pos)
		fs.Usage()
		return errUsage
	}
	s := wire.ProtocolSettings{Replicas: *replicas, Cluster: *cluster}
	for _, t := range strings.Split(*tags, ",") {
		if t = strings.TrimSpace(t); t != "" {
			s.Tags = append(s.Tags, t)
		}
	}
	for _, n := range strings.Split(*edges, ",") {
		if n = strings.TrimSpace(n); n != "" {
			s.EdgeNodes = append(s.EdgeNodes, n)
		}
	}
	if *replicas < 1 {
		return fmt.Errorf("--replicas %d: must be 1..%d", *replicas, wire.MaxReplicas)
	}
	if err := s.Validate(); err != nil {
		return fmt.Errorf("--replicas/--placement-*/--edge-nodes: %w", err)
	}
	cn, err := c.connect(ctx)
	if err != nil {
		return err
	}
	// Moving replicas takes the cluster a moment per bucket: allow each
	// bucket the request timeout, retrying while leaders are elected.
	bctx, cancel := context.WithTimeout(ctx, 4*c.g.timeout)
	defer cancel()
	res, err := wire.Bootstrap(bctx, cn.js, s)
	tw := tabwriter.NewWriter(c.stdout, 0, 4, 2, ' ', 0)
	fmt.Fprintln(tw, "NAME\tACTION\tREPLICAS\tPLACEMENT")
	for _, r := range res {
		place := "-"
		if r.Cluster != "" || len(r.Tags) > 0 {
			place = strings.TrimPrefix(strings.Join(append([]string{r.Cluster}, r.Tags...), ","), ",")
		}
		fmt.Fprintf(tw, "%s\t%s\t%d\t%s\n", r.Name, r.Action, r.Replicas, place)
	}
	_ = tw.Flush()
	if err != nil {
		return fmt.Errorf("bootstrap the bus: %w", err)
	}
	return nil
}
