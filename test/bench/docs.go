package main

import (
	_ "embed"
	"fmt"
	"os"
	"path/filepath"
	"strings"
	"text/template"
)

//go:embed benchmarks.md.tmpl
var docTemplate string

// writeDocs renders docs/benchmarks.md from the template and this run's
// tables, and draws the scale plot beside it.
func (e *env) writeDocs() error {
	if err := os.MkdirAll(e.out, 0o755); err != nil {
		return fmt.Errorf("create %s: %w", e.out, err)
	}
	plotName := "benchmarks-scale.png"
	if len(e.scalePoints) > 0 {
		if err := plotScale(filepath.Join(e.out, plotName), e.scalePoints); err != nil {
			return err
		}
	}
	tables := map[string]string{}
	for _, s := range sections {
		var b strings.Builder
		for _, t := range e.report.bySection[s] {
			t.markdown(&b)
		}
		if err := e.report.failures[s]; err != nil {
			fmt.Fprintf(&b, "_This section failed in the run that wrote this file: %v_\n", err)
		}
		if b.Len() == 0 {
			b.WriteString("_Not run in the invocation that wrote this file._\n")
		}
		tables[s] = b.String()
	}
	tmpl, err := template.New("benchmarks.md").Parse(docTemplate)
	if err != nil {
		return fmt.Errorf("parse the docs template: %w", err)
	}
	path := filepath.Join(e.out, "benchmarks.md")
	f, err := os.Create(path)
	if err != nil {
		return fmt.Errorf("create %s: %w", path, err)
	}
	defer f.Close()
	err = tmpl.Execute(f, map[string]any{
		"Machine": e.machine, "Command": "make bench ARGS=\"" + strings.Join(os.Args[1:], " ") + "\"",
		"Tables": tables, "Plot": plotName, "HasPlot": len(e.scalePoints) > 0, "Run": e.run, "Quick": e.quick,
	})
	if err != nil {
		return fmt.Errorf("render %s: %w", path, err)
	}
	fmt.Printf("\nwrote %s\n", path)
	return f.Close()
}
