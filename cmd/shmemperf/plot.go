package main

import (
	"cmp"
	"errors"
	"fmt"
	"io"
	"maps"
	"math"
	"os"
	"path/filepath"
	"slices"
	"strings"

	"gonum.org/v1/plot"
	"gonum.org/v1/plot/plotter"
	"gonum.org/v1/plot/plotutil"
	"gonum.org/v1/plot/vg"
	"gonum.org/v1/plot/vg/draw"
	"gonum.org/v1/plot/vg/vgimg"
	"gonum.org/v1/plot/vg/vgsvg"
)

func plotExt(name string) string { return strings.ToLower(filepath.Ext(name)) }

// plotFiles draws the results in the JSON lines files from into file.
func plotFiles(file string, from []string) error {
	var all []result
	for _, name := range from {
		f, err := os.Open(name)
		if err != nil {
			return fmt.Errorf("-from: %w", err)
		}
		rs, err := readResults(name, f)
		f.Close()
		if err != nil {
			return fmt.Errorf("-from: %w", err)
		}
		all = append(all, rs...)
	}
	return plotResults(file, all)
}

// plotResults draws latency and bandwidth against size, one panel each,
// into file (.svg or .png). Figures without a size (barrier) and rates
// are left out: they are single points, which the table shows better.
func plotResults(file string, results []result) error {
	panels, err := buildPanels(results)
	if err != nil {
		return err
	}
	const width = 22 * vg.Centimeter
	height := vg.Length(len(panels)) * 12 * vg.Centimeter
	var canvas interface {
		vg.CanvasSizer
		io.WriterTo
	}
	if plotExt(file) == ".svg" {
		canvas = vgsvg.New(width, height)
	} else {
		canvas = vgimg.PngCanvas{Canvas: vgimg.NewWith(vgimg.UseWH(width, height), vgimg.UseDPI(110))}
	}
	grid := make([][]*plot.Plot, len(panels))
	for i, p := range panels {
		grid[i] = []*plot.Plot{p}
	}
	tiles := draw.Tiles{Rows: len(panels), Cols: 1, PadX: vg.Centimeter, PadY: vg.Centimeter,
		PadTop: vg.Centimeter / 2, PadBottom: vg.Centimeter / 2, PadLeft: vg.Centimeter / 2, PadRight: vg.Centimeter}
	dc := draw.New(canvas)
	for i, cs := range plot.Align(grid, tiles, dc) {
		grid[i][0].Draw(cs[0])
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

// series is one line: a test on a provider with a number of PEs. Rounds
// of the same run give several figures per size; the line goes through
// their median.
type series struct {
	test, provider string
	npes           int
	bySize         map[int][]float64
}

func (s *series) points() plotter.XYs {
	var pts plotter.XYs
	for size, vs := range s.bySize {
		m, _ := median(vs)
		pts = append(pts, plotter.XY{X: float64(size), Y: m})
	}
	slices.SortFunc(pts, func(a, b plotter.XY) int { return cmp.Compare(a.X, b.X) })
	return pts
}

// buildPanels makes latency and bandwidth panels of whichever results have
// them. Lines of the same test share a colour; providers differ by dash
// pattern and marker, so a peer and ours read as a pair. Tests that only
// some providers ran (the collectives, which a peer may lack) get a panel
// of their own, so the comparison stays uncluttered, and a test measured
// at one size only (an atomic) is left to the table when others have
// curves.
func buildPanels(results []result) ([]*plot.Plot, error) {
	byMetric := map[metric]map[string]*series{} // by metric, then line
	var tests, providers []string
	npes := map[int]bool{}
	for _, r := range results {
		v, m := r.value()
		if r.Size <= 0 || m == rate || v <= 0 {
			continue
		}
		if byMetric[m] == nil {
			byMetric[m] = map[string]*series{}
		}
		key := fmt.Sprintf("%s/%s/%d", r.Test, r.Provider, r.NPEs)
		s := byMetric[m][key]
		if s == nil {
			s = &series{test: r.Test, provider: r.Provider, npes: r.NPEs, bySize: map[int][]float64{}}
			byMetric[m][key] = s
		}
		s.bySize[r.Size] = append(s.bySize[r.Size], v)
		if !slices.Contains(tests, r.Test) {
			tests = append(tests, r.Test)
		}
		if !slices.Contains(providers, r.Provider) {
			providers = append(providers, r.Provider)
		}
		npes[r.NPEs] = true
	}
	where := ""
	if len(npes) == 1 {
		for n := range npes {
			where = fmt.Sprintf(", %d PEs", n)
		}
	}
	var panels []*plot.Plot
	for _, m := range []metric{latency, bandwidth} {
		for _, g := range groupSeries(byMetric[m], providers) {
			slices.SortFunc(g.lines, func(a, b *series) int {
				return cmp.Or(cmp.Compare(slices.Index(tests, a.test), slices.Index(tests, b.test)),
					cmp.Compare(slices.Index(providers, a.provider), slices.Index(providers, b.provider)),
					cmp.Compare(a.npes, b.npes))
			})
			p, err := panel(m, where+g.title, g.lines, len(npes) > 1, func(s *series) (int, int) {
				return slices.Index(tests, s.test), slices.Index(providers, s.provider)
			})
			if err != nil {
				return nil, err
			}
			panels = append(panels, p)
		}
	}
	if len(panels) == 0 {
		return nil, errors.New("-plot: no latency or bandwidth figure with a size to draw (rates and barrier are tables only)")
	}
	return panels, nil
}

// group is the lines of one panel.
type group struct {
	title string // what sets it apart, after the metric: ", loopback only"
	lines []*series
}

// groupSeries splits one metric's lines into panels: first the tests every
// provider ran, then those of each smaller set of providers; collectives
// apart from the point-to-point tests. Lines of one size are dropped when
// others have more.
func groupSeries(lines map[string]*series, providers []string) []group {
	curves := false
	for _, s := range lines {
		curves = curves || len(s.bySize) > 1
	}
	ranBy := map[string][]string{} // test -> providers, in the order of providers
	for _, s := range lines {
		if !slices.Contains(ranBy[s.test], s.provider) {
			ranBy[s.test] = append(ranBy[s.test], s.provider)
		}
	}
	var groups []group
	index := map[string]int{}
	for _, k := range slices.Sorted(maps.Keys(lines)) {
		s := lines[k]
		if curves && len(s.bySize) < 2 {
			continue
		}
		who := ranBy[s.test]
		slices.SortFunc(who, func(a, b string) int { return cmp.Compare(slices.Index(providers, a), slices.Index(providers, b)) })
		key := strings.Join(who, ", ")
		coll := isCollective(s.test)
		i, ok := index[fmt.Sprint(key, coll)]
		if !ok {
			title := ""
			if coll {
				title = ", collectives"
			}
			if len(who) < len(providers) {
				title += ", " + key + " only"
			}
			i = len(groups)
			index[fmt.Sprint(key, coll)] = i
			groups = append(groups, group{title: title})
		}
		groups[i].lines = append(groups[i].lines, s)
	}
	slices.SortStableFunc(groups, func(a, b group) int { return cmp.Compare(len(a.title), len(b.title)) })
	return groups
}

// palette has a distinct colour for each of up to 14 tests.
var palette = append(slices.Clone(plotutil.DarkColors), plotutil.SoftColors...)

// panel draws lines of metric m on log axes. style gives a line's test and
// provider indexes: the first picks its colour, the second its dashes and
// marker. The legend sits above the top left corner of the lines.
func panel(m metric, title string, lines []*series, showPEs bool, style func(*series) (int, int)) (*plot.Plot, error) {
	p := plot.New()
	switch m {
	case latency:
		p.Title.Text = "Latency" + title + " (lower is better)"
		p.Y.Label.Text = "latency per operation (µs)"
	case bandwidth:
		p.Title.Text = "Bandwidth" + title + " (higher is better)"
		p.Y.Label.Text = "bandwidth (MB/s, 10⁶ bytes per second)"
	}
	p.Title.TextStyle.Font.Size = vg.Points(14)
	p.X.Label.Text = "message size (bytes)"
	p.X.Scale, p.Y.Scale = plot.LogScale{}, plot.LogScale{}
	p.X.Tick.Marker = sizeTicks{}
	p.Y.Tick.Marker = plot.LogTicks{Prec: -1}
	p.Add(plotter.NewGrid())
	p.Legend.Top, p.Legend.Left = true, true
	p.Legend.XOffs, p.Legend.YOffs = vg.Millimeter*3, -vg.Millimeter*2
	p.Legend.ThumbnailWidth = vg.Centimeter
	p.Legend.TextStyle.Font.Size = vg.Points(10)
	for _, s := range lines {
		line, points, err := plotter.NewLinePoints(s.points())
		if err != nil {
			return nil, fmt.Errorf("-plot: %s on %s: %w", s.test, s.provider, err)
		}
		ti, pi := style(s)
		line.Color = palette[ti%len(palette)]
		line.Width = vg.Points(1.5)
		line.Dashes = plotutil.Dashes(pi)
		points.Color = line.Color
		points.Shape = plotutil.Shape(pi)
		p.Add(line, points)
		label := s.test + " · " + s.provider
		if showPEs {
			label += fmt.Sprintf(" · %d PEs", s.npes)
		}
		p.Legend.Add(label, line, points)
	}
	// A log axis needs a range: one size, or one figure, gets an octave
	// either side.
	for _, a := range []*plot.Axis{&p.X, &p.Y} {
		if a.Min == a.Max {
			a.Min, a.Max = a.Min/2, a.Max*2
		}
	}
	return p, nil
}

// sizeTicks marks powers of two on a log size axis, labelling every other
// one with a binary unit: 8, 32, 128, 512, 2K, ...
type sizeTicks struct{}

func (sizeTicks) Ticks(lo, hi float64) []plot.Tick {
	var ticks []plot.Tick
	for e := math.Floor(math.Log2(lo)); e <= math.Ceil(math.Log2(hi)); e++ {
		v := math.Exp2(e)
		if v < lo || v > hi {
			continue
		}
		t := plot.Tick{Value: v}
		if int(e)%2 == 1 || lo*4 > hi {
			t.Label = formatSize(int(v))
		}
		ticks = append(ticks, t)
	}
	return ticks
}
