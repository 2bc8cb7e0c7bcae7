package main

import (
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"
)

func TestPercentile(t *testing.T) {
	ms := time.Millisecond
	d := durations{5 * ms, 1 * ms, 4 * ms, 2 * ms, 3 * ms}
	tests := []struct {
		p    float64
		want time.Duration
	}{{50, 3 * ms}, {99, 5 * ms}, {100, 5 * ms}, {1, 1 * ms}, {20, 1 * ms}, {21, 2 * ms}}
	for _, tt := range tests {
		if got := d.percentile(tt.p); got != tt.want {
			t.Errorf("percentile(%v) = %v, want %v", tt.p, got, tt.want)
		}
	}
	if got := (durations{}).percentile(50); got != 0 {
		t.Errorf("empty percentile = %v, want 0", got)
	}
	if d[0] != 5*ms {
		t.Error("percentile sorted its receiver in place")
	}
}

func TestParseSizes(t *testing.T) {
	tests := []struct {
		in      string
		want    []int
		wantErr bool
	}{
		{"10,30,100", []int{10, 30, 100}, false},
		{" 5 ", []int{5}, false},
		{"10,,20", nil, true},
		{"0", nil, true},
		{"-3", nil, true},
		{"x", nil, true},
	}
	for _, tt := range tests {
		got, err := parseSizes(tt.in)
		if (err != nil) != tt.wantErr || !tt.wantErr && len(got) != len(tt.want) {
			t.Errorf("parseSizes(%q) = %v, %v; want %v (error %v)", tt.in, got, err, tt.want, tt.wantErr)
		}
	}
}

func TestTableMarkdown(t *testing.T) {
	tb := newTable("T", "a", "b")
	tb.add(1, 1500*time.Microsecond)
	tb.note("n %d", 2)
	var b strings.Builder
	tb.markdown(&b)
	want := "#### T\n\n| a | b |\n| --- | --- |\n| 1 | 1.50 |\n\n- n 2\n\n"
	if b.String() != want {
		t.Errorf("markdown =\n%q\nwant\n%q", b.String(), want)
	}
}

func TestProcCPUAndRSS(t *testing.T) {
	if _, err := procCPU("self"); err != nil {
		t.Fatal(err)
	}
	rss, err := procRSS("self")
	if err != nil || rss <= 0 {
		t.Fatalf("procRSS = %d, %v; want a positive size", rss, err)
	}
	if _, err := procCPU("999999999"); err == nil {
		t.Error("procCPU of a missing process: want an error")
	}
}

func TestWriteDocsRendersEverySection(t *testing.T) {
	dir := t.TempDir()
	e := &env{out: dir, run: "r1", machine: "m", quick: true, report: &report{}}
	e.report.section = "idle"
	tb := newTable("Idle", "a")
	tb.add(1)
	e.report.bySection = map[string][]*table{"idle": {tb}}
	e.report.fail("start", errTest("boom"))
	if err := e.writeDocs(); err != nil {
		t.Fatal(err)
	}
	data, err := os.ReadFile(filepath.Join(dir, "benchmarks.md"))
	if err != nil {
		t.Fatal(err)
	}
	for _, want := range []string{"#### Idle", "failed in the run that wrote this file: boom", "Not run in the invocation", "-quick` figures", "machine: m"} {
		if !strings.Contains(string(data), want) {
			t.Errorf("benchmarks.md lacks %q", want)
		}
	}
}

type errTest string

func (e errTest) Error() string { return string(e) }
