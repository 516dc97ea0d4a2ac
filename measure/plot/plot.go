package plot

import (
	"bufio"
	"fmt"
	"html"
	"io"
	"math"
	"strconv"
	"strings"
)

// Plot is a line plot of some series over the same categories: the x axis
// spaces its values evenly and labels each (conversation lengths 0, 1000,
// 100000 read better evenly than on any scale).
type Plot struct {
	Title  string
	XLabel string
	YLabel string
	X      []string // the categories, left to right
	Series []Series
}

// Series is one line: a value for each category, NaN where none.
type Series struct {
	Name string
	Y    []float64
}

// The plot's geometry, in SVG user units.
const (
	plotWidth   = 640
	plotHeight  = 400
	plotLeft    = 80
	plotRight   = 170 // room for the legend
	plotTop     = 40
	plotBottom  = 60
	yTicks      = 5
	pointRadius = 3
)

// seriesColors are the lines' colors, in order, readable by most people
// who tell colors apart poorly (Okabe and Ito's palette).
var seriesColors = []string{"#0072B2", "#D55E00", "#009E73", "#CC79A7", "#E69F00", "#56B4E9"}

// WriteSVG writes p as a standalone SVG document. The output depends only
// on p, so it can be compared with a golden file.
func (p *Plot) WriteSVG(w io.Writer) error {
	bw := bufio.NewWriter(w)
	innerW := float64(plotWidth - plotLeft - plotRight)
	innerH := float64(plotHeight - plotTop - plotBottom)
	ymax := niceCeil(p.maxY())
	x := func(i int) float64 {
		if len(p.X) <= 1 {
			return plotLeft + innerW/2
		}
		return plotLeft + innerW*float64(i)/float64(len(p.X)-1)
	}
	y := func(v float64) float64 { return plotTop + innerH*(1-v/ymax) }

	fmt.Fprintf(bw, `<svg xmlns="http://www.w3.org/2000/svg" width="%d" height="%d" viewBox="0 0 %d %d" font-family="sans-serif" font-size="12">`+"\n",
		plotWidth, plotHeight, plotWidth, plotHeight)
	fmt.Fprintf(bw, `<rect width="%d" height="%d" fill="white"/>`+"\n", plotWidth, plotHeight)
	fmt.Fprintf(bw, `<text x="%d" y="%d" font-size="15" font-weight="bold">%s</text>`+"\n", plotLeft, plotTop-18, esc(p.Title))

	// The y axis: gridlines and their values.
	for i := 0; i <= yTicks; i++ {
		v := ymax * float64(i) / yTicks
		yy := num(y(v))
		fmt.Fprintf(bw, `<line x1="%d" y1="%s" x2="%s" y2="%s" stroke="#ddd"/>`+"\n", plotLeft, yy, num(plotLeft+innerW), yy)
		fmt.Fprintf(bw, `<text x="%d" y="%s" text-anchor="end" dominant-baseline="middle">%s</text>`+"\n", plotLeft-6, yy, num(v))
	}
	fmt.Fprintf(bw, `<text transform="translate(%d %s) rotate(-90)" text-anchor="middle">%s</text>`+"\n", 18, num(plotTop+innerH/2), esc(p.YLabel))

	// The x axis: a tick and label per category.
	base := num(plotTop + innerH)
	fmt.Fprintf(bw, `<line x1="%d" y1="%s" x2="%s" y2="%s" stroke="black"/>`+"\n", plotLeft, base, num(plotLeft+innerW), base)
	fmt.Fprintf(bw, `<line x1="%d" y1="%d" x2="%d" y2="%s" stroke="black"/>`+"\n", plotLeft, plotTop, plotLeft, base)
	for i, label := range p.X {
		xx := num(x(i))
		fmt.Fprintf(bw, `<line x1="%s" y1="%s" x2="%s" y2="%s" stroke="black"/>`+"\n", xx, base, xx, num(plotTop+innerH+5))
		fmt.Fprintf(bw, `<text x="%s" y="%s" text-anchor="middle">%s</text>`+"\n", xx, num(plotTop+innerH+20), esc(label))
	}
	fmt.Fprintf(bw, `<text x="%s" y="%d" text-anchor="middle">%s</text>`+"\n", num(plotLeft+innerW/2), plotHeight-12, esc(p.XLabel))

	// The series, then the legend.
	for si, s := range p.Series {
		color := seriesColors[si%len(seriesColors)]
		var path []byte
		for i, v := range s.Y {
			if i >= len(p.X) || math.IsNaN(v) || math.IsInf(v, 0) {
				continue
			}
			if len(path) == 0 {
				path = append(path, 'M')
			} else {
				path = append(path, " L"...)
			}
			path = append(path, num(x(i))+" "+num(y(v))...)
		}
		if len(path) > 0 {
			fmt.Fprintf(bw, `<path d="%s" fill="none" stroke="%s" stroke-width="2"/>`+"\n", path, color)
		}
		for i, v := range s.Y {
			if i >= len(p.X) || math.IsNaN(v) || math.IsInf(v, 0) {
				continue
			}
			fmt.Fprintf(bw, `<circle cx="%s" cy="%s" r="%d" fill="%s"><title>%s: %s</title></circle>`+"\n",
				num(x(i)), num(y(v)), pointRadius, color, esc(s.Name), num(v))
		}
		ly := plotTop + 10 + 20*si
		lx := plotWidth - plotRight + 15
		fmt.Fprintf(bw, `<line x1="%d" y1="%d" x2="%d" y2="%d" stroke="%s" stroke-width="2"/>`+"\n", lx, ly, lx+20, ly, color)
		fmt.Fprintf(bw, `<text x="%d" y="%d" dominant-baseline="middle">%s</text>`+"\n", lx+26, ly, esc(s.Name))
	}
	fmt.Fprintln(bw, `</svg>`)
	return bw.Flush()
}

func (p *Plot) maxY() float64 {
	m := 0.0
	for _, s := range p.Series {
		for _, v := range s.Y {
			if !math.IsNaN(v) && !math.IsInf(v, 0) && v > m {
				m = v
			}
		}
	}
	return m
}

// niceCeil returns the smallest of 1, 2, 2.5 or 5 times a power of ten at
// or above v, so the axis's ticks are round numbers; 1 for v <= 0.
func niceCeil(v float64) float64 {
	if v <= 0 {
		return 1
	}
	p := math.Pow(10, math.Floor(math.Log10(v)))
	for _, m := range []float64{1, 2, 2.5, 5, 10} {
		if m*p >= v*(1-1e-12) {
			return m * p
		}
	}
	return 10 * p
}

// num formats a coordinate or a value briefly: at most four significant
// digits past what the integer part needs, trailing zeros cut.
func num(v float64) string {
	if v == math.Trunc(v) && math.Abs(v) < 1e15 {
		return strconv.FormatInt(int64(v), 10)
	}
	prec := 2
	if a := math.Abs(v); a < 1 {
		prec = 4
	}
	s := strconv.FormatFloat(v, 'f', prec, 64)
	s = strings.TrimRight(s, "0")
	s = strings.TrimSuffix(s, ".")
	if s == "-0" {
		s = "0"
	}
	return s
}

func esc(s string) string { return html.EscapeString(s) }
