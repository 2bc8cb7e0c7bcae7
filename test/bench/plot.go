package main

import (
	"fmt"
	"os"

	"gonum.org/v1/plot"
	"gonum.org/v1/plot/plotter"
	"gonum.org/v1/plot/vg"
	"gonum.org/v1/plot/vg/draw"
	"gonum.org/v1/plot/vg/vgimg"
)

// plotScale draws how the scale section's figures grow with the number of
// pods: four panels, pods on a log axis, into a PNG.
func plotScale(path string, points []scalePoint) error {
	if len(points) == 0 {
		return nil
	}
	panels := []struct {
		title, unit string
		value       func(scalePoint) float64
	}{
		{"Pods to Running per second", "pods/s", func(p scalePoint) float64 { return p.rate }},
		{"Heap per pod", "KiB", func(p scalePoint) float64 { return p.bytesPerPod / 1024 }},
		{"PLEG relist and housekeeping pass", "ms", func(p scalePoint) float64 { return ms64(p.relist) }},
		{"Terminate all (purge → none running)", "s", func(p scalePoint) float64 { return p.terminate.Seconds() }},
	}
	plots := make([][]*plot.Plot, 2)
	for i, pn := range panels {
		p := plot.New()
		p.Title.Text = pn.title
		p.X.Label.Text = "pods on the node"
		p.Y.Label.Text = pn.unit
		p.X.Scale = plot.LogScale{}
		p.X.Tick.Marker = plot.LogTicks{Prec: -1}
		p.Y.Min = 0
		xy := make(plotter.XYs, len(points))
		for j, pt := range points {
			xy[j] = plotter.XY{X: float64(pt.n), Y: pn.value(pt)}
		}
		line, marks, err := plotter.NewLinePoints(xy)
		if err != nil {
			return fmt.Errorf("plot %s: %w", pn.title, err)
		}
		p.Add(line, marks, plotter.NewGrid())
		if i == 2 {
			hk := make(plotter.XYs, len(points))
			for j, pt := range points {
				hk[j] = plotter.XY{X: float64(pt.n), Y: ms64(pt.housekeeping)}
			}
			l2, m2, err := plotter.NewLinePoints(hk)
			if err != nil {
				return fmt.Errorf("plot housekeeping: %w", err)
			}
			l2.Dashes, m2.Shape = []vg.Length{vg.Points(4), vg.Points(3)}, draw.BoxGlyph{}
			p.Add(l2, m2)
			p.Legend.Add("relist", line, marks)
			p.Legend.Add("housekeeping", l2, m2)
			p.Legend.Top, p.Legend.Left = true, true
		}
		plots[i/2] = append(plots[i/2], p)
	}
	img := vgimg.New(vg.Points(900), vg.Points(640))
	dc := draw.New(img)
	tiles := draw.Tiles{Rows: 2, Cols: 2, PadX: vg.Points(20), PadY: vg.Points(20), PadTop: vg.Points(10), PadBottom: vg.Points(10), PadLeft: vg.Points(10), PadRight: vg.Points(10)}
	canvases := plot.Align(plots, tiles, dc)
	for r := range plots {
		for c := range plots[r] {
			plots[r][c].Draw(canvases[r][c])
		}
	}
	f, err := os.Create(path)
	if err != nil {
		return fmt.Errorf("create %s: %w", path, err)
	}
	defer f.Close()
	if _, err := (vgimg.PngCanvas{Canvas: img}).WriteTo(f); err != nil {
		return fmt.Errorf("write %s: %w", path, err)
	}
	return f.Close()
}

func ms64(d interface{ Seconds() float64 }) float64 { return d.Seconds() * 1000 }
