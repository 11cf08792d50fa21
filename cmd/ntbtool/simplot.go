package main

import (
	"fmt"
	"io"
	"os"
	"path/filepath"
	"strings"

	"gonum.org/v1/plot"
	"gonum.org/v1/plot/plotter"
	"gonum.org/v1/plot/plotutil"
	"gonum.org/v1/plot/vg"
	"gonum.org/v1/plot/vg/draw"
	"gonum.org/v1/plot/vg/vgimg"
	"gonum.org/v1/plot/vg/vgsvg"
)

// plotSim draws sim's key figures into file (.svg or .png), one panel a
// figure: put rate by hop count, each host's alltoall throughput and the
// links' busy share by ring size, and a stream's rate after a cut.
func plotSim(file string, res simResult) error {
	var panels []*plot.Plot
	add := func(title, x, y string, lines map[string]plotter.XYs) error {
		if len(lines) == 0 {
			return nil
		}
		p := plot.New()
		p.Title.Text, p.X.Label.Text, p.Y.Label.Text = title, x, y
		p.Y.Min = 0
		var args []any
		for _, name := range sortedKeys(lines) {
			args = append(args, name, lines[name])
		}
		if err := plotutil.AddLinePoints(p, args...); err != nil {
			return err
		}
		p.Legend.Top = true
		panels = append(panels, p)
		return nil
	}
	lines := map[string]plotter.XYs{}
	maxHops := 1
	for _, r := range res.Hops {
		k := label(r.Protocol, r.Fabric) + fmt.Sprintf(" (%d)", r.Hosts)
		lines[k+" put"] = append(lines[k+" put"], plotter.XY{X: float64(r.Hops), Y: r.PutMBps})
		lines[k+" get"] = append(lines[k+" get"], plotter.XY{X: float64(r.Hops), Y: r.GetMBps})
		maxHops = max(maxHops, r.Hops)
	}
	if len(res.Hops) > 0 {
		r := res.Hops[0]
		lines["link payload rate"] = plotter.XYs{{X: 1, Y: r.LinkMBps}, {X: float64(maxHops), Y: r.LinkMBps}}
		if err := add(fmt.Sprintf("%s of put and get by hops (%s)", sizeText(r.Size), res.Model.Name), "hops", "MB/s", lines); err != nil {
			return err
		}
	}
	lines = map[string]plotter.XYs{}
	busy := map[string]plotter.XYs{}
	for _, r := range res.Alltoall {
		k := label(r.Protocol, r.Fabric)
		lines[k] = append(lines[k], plotter.XY{X: float64(r.Hosts), Y: r.PerHostMBps})
		busy[k] = append(busy[k], plotter.XY{X: float64(r.Hosts), Y: r.LinkShare})
	}
	if err := add("alltoall: each host's throughput by size", "hosts", "MB/s per host", lines); err != nil {
		return err
	}
	if err := add("alltoall: share of the links' capacity carrying bytes", "hosts", "links busy", busy); err != nil {
		return err
	}
	lines = map[string]plotter.XYs{}
	for _, r := range res.Barrier {
		k := label(r.Protocol, r.Fabric)
		lines[k] = append(lines[k], plotter.XY{X: float64(r.Hosts), Y: r.Us})
	}
	if err := add("barrier by size", "hosts", "us", lines); err != nil {
		return err
	}
	lines = map[string]plotter.XYs{}
	for _, r := range res.Coll {
		if r.Bytes == 64<<10 && r.Protocol == "ring" {
			k := label(r.Protocol, r.Fabric) + " " + r.Op
			lines[k] = append(lines[k], plotter.XY{X: float64(r.Hosts), Y: r.Us})
		}
	}
	if err := add("shmem's collectives of 64 KiB a PE, ring protocol", "hosts", "us", lines); err != nil {
		return err
	}
	lines = map[string]plotter.XYs{}
	for _, r := range res.Cut {
		k := label(r.Protocol, r.Fabric)
		lines[k+" before the cut"] = append(lines[k+" before the cut"], plotter.XY{X: float64(r.Hosts), Y: r.BeforeMBps})
		lines[k+" after, round it"] = append(lines[k+" after, round it"], plotter.XY{X: float64(r.Hosts), Y: r.AfterMBps})
	}
	if err := add("a stream to the neighbour, its link cut", "hosts", "MB/s", lines); err != nil {
		return err
	}
	if len(panels) == 0 {
		return fmt.Errorf("-plot: nothing to draw")
	}
	return drawPanels(file, panels)
}

func sizeText(n int) string {
	switch {
	case n >= 1<<20 && n%(1<<20) == 0:
		return fmt.Sprintf("%d MiB", n>>20)
	case n >= 1<<10 && n%(1<<10) == 0:
		return fmt.Sprintf("%d KiB", n>>10)
	}
	return fmt.Sprintf("%d B", n)
}

func sortedKeys(m map[string]plotter.XYs) []string {
	keys := make([]string, 0, len(m))
	for k := range m {
		keys = append(keys, k)
	}
	for i := range keys { // few keys: insertion sort
		for j := i; j > 0 && keys[j] < keys[j-1]; j-- {
			keys[j], keys[j-1] = keys[j-1], keys[j]
		}
	}
	return keys
}

// drawPanels lays panels out two a row into file.
func drawPanels(file string, panels []*plot.Plot) error {
	const cols = 2
	rows := (len(panels) + cols - 1) / cols
	width, height := 2*14*vg.Centimeter, vg.Length(rows)*10*vg.Centimeter
	var canvas interface {
		vg.CanvasSizer
		io.WriterTo
	}
	if strings.ToLower(filepath.Ext(file)) == ".svg" {
		canvas = vgsvg.New(width, height)
	} else {
		canvas = vgimg.PngCanvas{Canvas: vgimg.NewWith(vgimg.UseWH(width, height), vgimg.UseDPI(100))}
	}
	grid := make([][]*plot.Plot, rows)
	for i := range grid {
		grid[i] = make([]*plot.Plot, cols)
	}
	for i, p := range panels {
		grid[i/cols][i%cols] = p
	}
	tiles := draw.Tiles{Rows: rows, Cols: cols, PadX: vg.Centimeter, PadY: vg.Centimeter,
		PadTop: vg.Centimeter / 2, PadBottom: vg.Centimeter / 2, PadLeft: vg.Centimeter / 2, PadRight: vg.Centimeter / 2}
	dc := draw.New(canvas)
	for i, row := range plot.Align(grid, tiles, dc) {
		for j, c := range row {
			if grid[i][j] != nil {
				grid[i][j].Draw(c)
			}
		}
	}
	f, err := os.Create(file)
	if err != nil {
		return fmt.Errorf("-plot: %w", err)
	}
	if _, err := canvas.WriteTo(f); err != nil {
		f.Close()
		return fmt.Errorf("-plot: %w", err)
	}
	return f.Close()
}

// label names a protocol on a fabric in a plot's legend: "ring" and
// "seed" on a ring, "ring on torus" on a torus of any size.
func label(proto, fabric string) string {
	if f, _, _ := strings.Cut(fabric, " "); f != "ring" && f != "" {
		return proto + " on " + f
	}
	return proto
}
