package main

import (
	"fmt"
	"io"
	"math"
	"os"
	"sort"
	"strings"
	"text/tabwriter"
	"time"
)

// durations summarises a set of latencies.
type durations []time.Duration

// percentile is the nearest-rank percentile p (0 < p ≤ 100); zero when empty.
func (d durations) percentile(p float64) time.Duration {
	if len(d) == 0 {
		return 0
	}
	s := append(durations(nil), d...)
	sort.Slice(s, func(i, j int) bool { return s[i] < s[j] })
	rank := int(math.Ceil(p / 100 * float64(len(s))))
	if rank < 1 {
		rank = 1
	}
	if rank > len(s) {
		rank = len(s)
	}
	return s[rank-1]
}

func (d durations) max() time.Duration { return d.percentile(100) }

// table is one printed result table; the report keeps them all.
type table struct {
	title  string
	header []string
	rows   [][]string
	notes  []string
}

func newTable(title string, header ...string) *table { return &table{title: title, header: header} }

func (t *table) add(cells ...any) {
	row := make([]string, len(cells))
	for i, c := range cells {
		row[i] = cell(c)
	}
	t.rows = append(t.rows, row)
}

func (t *table) note(format string, args ...any) {
	t.notes = append(t.notes, fmt.Sprintf(format, args...))
}

func cell(c any) string {
	switch v := c.(type) {
	case time.Duration:
		return ms(v)
	case float64:
		return fmt.Sprintf("%.2f", v)
	case string:
		return v
	default:
		return fmt.Sprint(v)
	}
}

// ms prints a duration in milliseconds, the unit every table uses.
func ms(d time.Duration) string {
	switch {
	case d == 0:
		return "0"
	case d < 10*time.Millisecond:
		return fmt.Sprintf("%.2f", float64(d)/float64(time.Millisecond))
	default:
		return fmt.Sprintf("%.0f", float64(d)/float64(time.Millisecond))
	}
}

func ratio(a, b time.Duration) string {
	if b <= 0 {
		return "-"
	}
	return fmt.Sprintf("%.2f×", float64(a)/float64(b))
}

// print writes t as aligned text.
func (t *table) print(w io.Writer) {
	fmt.Fprintf(w, "\n## %s\n\n", t.title)
	tw := tabwriter.NewWriter(w, 2, 4, 2, ' ', 0)
	fmt.Fprintln(tw, strings.Join(t.header, "\t"))
	for _, r := range t.rows {
		fmt.Fprintln(tw, strings.Join(r, "\t"))
	}
	_ = tw.Flush()
	for _, n := range t.notes {
		fmt.Fprintf(w, "  * %s\n", n)
	}
}

// markdown writes t as a Markdown table, for docs/benchmarks.md.
func (t *table) markdown(w io.Writer) {
	fmt.Fprintf(w, "#### %s\n\n| %s |\n|%s\n", t.title, strings.Join(t.header, " | "), strings.Repeat(" --- |", len(t.header)))
	for _, r := range t.rows {
		fmt.Fprintf(w, "| %s |\n", strings.Join(r, " | "))
	}
	fmt.Fprintln(w)
	for _, n := range t.notes {
		fmt.Fprintf(w, "- %s\n", n)
	}
	if len(t.notes) > 0 {
		fmt.Fprintln(w)
	}
}

// report collects the tables of one run, by section.
type report struct {
	section   string
	bySection map[string][]*table
	failures  map[string]error
}

func (r *report) fail(section string, err error) {
	if r.failures == nil {
		r.failures = map[string]error{}
	}
	r.failures[section] = err
}

func (r *report) emit(t *table) {
	if r.bySection == nil {
		r.bySection = map[string][]*table{}
	}
	r.bySection[r.section] = append(r.bySection[r.section], t)
	t.print(os.Stdout)
}
