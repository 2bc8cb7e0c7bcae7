package main

import (
	"context"
	"fmt"
	"io"
	"sort"
	"strings"
	"text/tabwriter"
	"time"

	v1 "k8s.io/api/core/v1"

	"github.com/actorlet/actorlet/messages/wire"
)

func (c *cli) describe(ctx context.Context, args []string) error {
	fs := c.flags("describe")
	ns, node := podFlags(fs)
	pos, _, err := parse(fs, args)
	if err != nil {
		return err
	}
	if len(pos) != 2 || (pos[0] != "pod" && pos[0] != "pods" && pos[0] != "po") {
		fmt.Fprintln(c.stderr, "error: usage: describe pod NAME")
		fs.Usage()
		return errUsage
	}
	n, err := c.podNode(ctx, *ns, pos[1], *node)
	if err != nil {
		return err
	}
	cn, err := c.connect(ctx)
	if err != nil {
		return err
	}
	d, err := cn.client.DescribePod(ctx, n, *ns, pos[1])
	if err != nil {
		return err
	}
	if len(d.Events) == 0 {
		// The node keeps no event history: read the pod's from the stream.
		evs, it, err := c.storedEvents(ctx, cn, wire.EventSubject(n, *ns, pos[1]))
		if err != nil {
			fmt.Fprintf(c.stderr, "warning: events: %v\n", err)
		} else {
			it.Stop()
		}
		for _, e := range evs {
			d.Events = append(d.Events, *e)
		}
	}
	c.printDescription(c.stdout, n, d)
	return nil
}

func (c *cli) printDescription(out io.Writer, node string, d *wire.Description) {
	w := tabwriter.NewWriter(out, 0, 8, 1, ' ', 0)
	defer w.Flush()
	p, now := d.Pod, c.clock.Now()
	fmt.Fprintf(w, "Name:\t%s\n", p.Name)
	fmt.Fprintf(w, "Namespace:\t%s\n", p.Namespace)
	fmt.Fprintf(w, "UID:\t%s\n", p.UID)
	fmt.Fprintf(w, "Node:\t%s/%s\n", node, orElse(p.Status.HostIP, "<none>"))
	if p.Status.StartTime != nil {
		fmt.Fprintf(w, "Start Time:\t%s\n", p.Status.StartTime.Format(time.RFC1123Z))
	}
	fmt.Fprintf(w, "Labels:\t%s\n", mapString(p.Labels))
	fmt.Fprintf(w, "Status:\t%s\n", podReason(p))
	if p.DeletionTimestamp != nil {
		g := int64(0)
		if p.DeletionGracePeriodSeconds != nil {
			g = *p.DeletionGracePeriodSeconds
		}
		fmt.Fprintf(w, "Termination Grace Period:\t%ds (deletion requested %s ago)\n", g, age(p.DeletionTimestamp.Time, now))
	}
	if p.Status.Reason != "" {
		fmt.Fprintf(w, "Reason:\t%s\n", p.Status.Reason)
	}
	if p.Status.Message != "" {
		fmt.Fprintf(w, "Message:\t%s\n", p.Status.Message)
	}
	fmt.Fprintf(w, "IP:\t%s\n", orElse(p.Status.PodIP, "<none>"))
	if len(p.Spec.InitContainers) > 0 {
		fmt.Fprintf(w, "Init Containers:\n")
		describeContainers(w, p.Spec.InitContainers, p.Status.InitContainerStatuses, d.BackOffs, now)
	}
	fmt.Fprintf(w, "Containers:\n")
	describeContainers(w, p.Spec.Containers, p.Status.ContainerStatuses, d.BackOffs, now)
	if len(p.Spec.EphemeralContainers) > 0 {
		eph := make([]v1.Container, len(p.Spec.EphemeralContainers))
		for i := range p.Spec.EphemeralContainers {
			eph[i] = v1.Container(p.Spec.EphemeralContainers[i].EphemeralContainerCommon)
		}
		fmt.Fprintf(w, "Ephemeral Containers:\n")
		describeContainers(w, eph, p.Status.EphemeralContainerStatuses, d.BackOffs, now)
	}
	fmt.Fprintf(w, "Conditions:\n  Type\tStatus\tReason\n")
	for _, cd := range p.Status.Conditions {
		fmt.Fprintf(w, "  %s\t%s\t%s\n", cd.Type, cd.Status, cd.Reason)
	}

	wd := d.Worker
	fmt.Fprintf(w, "Actor:\n")
	if !wd.Found {
		fmt.Fprintf(w, "  State:\tno pod actor (not started yet, or already forgotten)\n")
	} else {
		fmt.Fprintf(w, "  Work Type:\t%s\n", wd.WorkType)
		fmt.Fprintf(w, "  Working:\t%v\n", wd.Working)
		fmt.Fprintf(w, "  Pending Update:\t%s\n", orElse(wd.PendingUpdate, "<none>"))
		if wd.RestartRequested {
			fmt.Fprintf(w, "  Restart Requested:\ttrue\n")
		}
		if wd.GracePeriod != nil {
			fmt.Fprintf(w, "  Grace Period:\t%ds\n", *wd.GracePeriod)
		}
		if !wd.LastSyncTime.IsZero() {
			fmt.Fprintf(w, "  Last Sync:\t%s ago\n", age(wd.LastSyncTime, now))
		}
		if wd.LastSyncError != "" {
			fmt.Fprintf(w, "  Last Sync Error:\t%s\n", wd.LastSyncError)
		}
		if !wd.NextSyncTime.IsZero() && wd.NextSyncTime.After(now) {
			fmt.Fprintf(w, "  Next Sync:\tin %s\n", wd.NextSyncTime.Sub(now).Round(time.Second))
		}
		fmt.Fprintf(w, "  Actor Restarts:\t%d\n", wd.ActorRestarts)
	}
	if len(d.BackOffs) > 0 {
		fmt.Fprintf(w, "Back-offs:\n")
		names := make([]string, 0, len(d.BackOffs))
		for n := range d.BackOffs {
			names = append(names, n)
		}
		sort.Strings(names)
		for _, n := range names {
			until := d.BackOffs[n]
			left := "expired"
			if until.After(now) {
				left = "restart in " + until.Sub(now).Round(time.Second).String()
			}
			fmt.Fprintf(w, "  %s:\t%s\n", n, left)
		}
	}
	if len(d.Probes) > 0 {
		fmt.Fprintf(w, "Probes:\n  Container\tKind\tResult\tSuccesses\tFailures\tLast\tMessage\n")
		for _, pr := range d.Probes {
			last := "never"
			if !pr.LastProbe.IsZero() {
				last = age(pr.LastProbe, now) + " ago"
			}
			fmt.Fprintf(w, "  %s\t%s\t%s\t%d\t%d\t%s\t%s\n", pr.ContainerName, pr.Kind, pr.Result, pr.Successes, pr.Failures, last, pr.Message)
		}
	}
	fmt.Fprintf(w, "Events:")
	if len(d.Events) == 0 {
		fmt.Fprintf(w, "\t<none>\n")
		return
	}
	fmt.Fprintf(w, "\n  Type\tReason\tAge\tMessage\n")
	for _, e := range d.Events {
		fmt.Fprintf(w, "  %s\t%s\t%s\t%s\n", e.Type, e.Reason, age(eventTime(&e), now), e.Message)
	}
}

func describeContainers(w io.Writer, specs []v1.Container, statuses []v1.ContainerStatus, backOffs map[string]time.Time, now time.Time) {
	for _, spec := range specs {
		fmt.Fprintf(w, "  %s:\n", spec.Name)
		fmt.Fprintf(w, "    Image:\t%s\n", spec.Image)
		var st *v1.ContainerStatus
		for i := range statuses {
			if statuses[i].Name == spec.Name {
				st = &statuses[i]
			}
		}
		if st == nil {
			fmt.Fprintf(w, "    State:\tnot created\n")
			continue
		}
		fmt.Fprintf(w, "    Container ID:\t%s\n", orElse(st.ContainerID, "<none>"))
		describeState(w, "State", st.State, now)
		if st.LastTerminationState.Terminated != nil || st.LastTerminationState.Waiting != nil || st.LastTerminationState.Running != nil {
			describeState(w, "Last State", st.LastTerminationState, now)
		}
		fmt.Fprintf(w, "    Ready:\t%v\n", st.Ready)
		fmt.Fprintf(w, "    Restart Count:\t%d\n", st.RestartCount)
	}
}

func describeState(w io.Writer, label string, s v1.ContainerState, now time.Time) {
	switch {
	case s.Running != nil:
		fmt.Fprintf(w, "    %s:\tRunning\n      Started:\t%s\n", label, s.Running.StartedAt.Format(time.RFC1123Z))
	case s.Waiting != nil:
		fmt.Fprintf(w, "    %s:\tWaiting\n      Reason:\t%s\n", label, s.Waiting.Reason)
		if s.Waiting.Message != "" {
			fmt.Fprintf(w, "      Message:\t%s\n", s.Waiting.Message)
		}
	case s.Terminated != nil:
		t := s.Terminated
		fmt.Fprintf(w, "    %s:\tTerminated\n      Reason:\t%s\n", label, orElse(t.Reason, "<none>"))
		if t.Message != "" {
			// kubectl's layout: a multi-line message indented under its key.
			fmt.Fprintf(w, "      Message:\t%s\n", strings.ReplaceAll(strings.TrimRight(t.Message, "\n"), "\n", "\n        "))
		}
		fmt.Fprintf(w, "      Exit Code:\t%d\n", t.ExitCode)
		if !t.FinishedAt.IsZero() {
			fmt.Fprintf(w, "      Finished:\t%s (%s ago)\n", t.FinishedAt.Format(time.RFC1123Z), age(t.FinishedAt.Time, now))
		}
	default:
		fmt.Fprintf(w, "    %s:\tUnknown\n", label)
	}
}

func mapString(m map[string]string) string {
	if len(m) == 0 {
		return "<none>"
	}
	var kv []string
	for k, v := range m {
		kv = append(kv, k+"="+v)
	}
	sort.Strings(kv)
	return strings.Join(kv, ",")
}
