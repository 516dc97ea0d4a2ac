package drive

import (
	"bufio"
	"errors"
	"fmt"
	"io"
	"math"
	"strconv"
	"strings"
)

// ErrMetrics comes from ParseMetrics when a line of the Prometheus text
// format cannot be read; the error says which line.
var ErrMetrics = errors.New("drive: bad metrics")

// Label is one label of a sample.
type Label struct {
	Name, Value string
}

// Series is one sample of the Prometheus text format: a metric's name, its
// labels in the order written, and its value.
type Series struct {
	Name   string
	Labels []Label
	Value  float64
}

// Metrics is a scrape of a /metrics page, in the order written.
type Metrics []Series

// maxMetricsLines bounds what ParseMetrics reads from one page: a process
// of 1,000 agents writes about 150 lines for each.
const maxMetricsLines = 1 << 22

// ParseMetrics reads the Prometheus text exposition format: comment and
// blank lines are skipped, and each other line is `name{labels} value`,
// optionally followed by a timestamp, which is ignored.
func ParseMetrics(r io.Reader) (Metrics, error) {
	var m Metrics
	sc := bufio.NewScanner(r)
	sc.Buffer(make([]byte, 0, 4096), 1<<20)
	for n := 1; sc.Scan(); n++ {
		if n > maxMetricsLines {
			return m, fmt.Errorf("%w: more than %d lines", ErrMetrics, maxMetricsLines)
		}
		line := strings.TrimSpace(sc.Text())
		if line == "" || line[0] == '#' {
			continue
		}
		s, err := parseSeries(line)
		if err != nil {
			return m, fmt.Errorf("%w: line %d: %v", ErrMetrics, n, err)
		}
		m = append(m, s)
	}
	if err := sc.Err(); err != nil {
		return m, fmt.Errorf("%w: %v", ErrMetrics, err)
	}
	return m, nil
}

func parseSeries(line string) (Series, error) {
	var s Series
	i := 0
	for i < len(line) && line[i] != '{' && line[i] != ' ' && line[i] != '\t' {
		i++
	}
	s.Name = line[:i]
	if s.Name == "" {
		return s, errors.New("no metric name")
	}
	rest := line[i:]
	if strings.HasPrefix(rest, "{") {
		labels, after, err := parseLabels(rest[1:])
		if err != nil {
			return s, err
		}
		s.Labels, rest = labels, after
	}
	fields := strings.Fields(rest)
	if len(fields) < 1 || len(fields) > 2 {
		return s, fmt.Errorf("%s: want a value and at most a timestamp", s.Name)
	}
	v, err := parseValue(fields[0])
	if err != nil {
		return s, fmt.Errorf("%s: %v", s.Name, err)
	}
	s.Value = v
	return s, nil
}

// parseLabels reads `a="x",b="y"}` and returns the labels and what follows
// the closing brace.
func parseLabels(s string) ([]Label, string, error) {
	var labels []Label
	for {
		s = strings.TrimLeft(s, " \t")
		if strings.HasPrefix(s, "}") {
			return labels, s[1:], nil
		}
		eq := strings.IndexByte(s, '=')
		if eq <= 0 {
			return nil, "", errors.New("a label without a name or '='")
		}
		name := strings.TrimSpace(s[:eq])
		s = strings.TrimLeft(s[eq+1:], " \t")
		if !strings.HasPrefix(s, `"`) {
			return nil, "", fmt.Errorf("label %s: value not quoted", name)
		}
		var v strings.Builder
		i := 1
		for ; i < len(s) && s[i] != '"'; i++ {
			c := s[i]
			if c == '\\' && i+1 < len(s) {
				i++
				switch s[i] {
				case 'n':
					c = '\n'
				default: // \\ and \"
					c = s[i]
				}
			}
			v.WriteByte(c)
		}
		if i >= len(s) {
			return nil, "", fmt.Errorf("label %s: value not closed", name)
		}
		labels = append(labels, Label{name, v.String()})
		s = strings.TrimLeft(s[i+1:], " \t")
		if strings.HasPrefix(s, ",") {
			s = s[1:]
		} else if !strings.HasPrefix(s, "}") {
			return nil, "", fmt.Errorf("label %s: want ',' or '}' after the value", name)
		}
	}
}

func parseValue(s string) (float64, error) {
	switch s {
	case "+Inf":
		return math.Inf(1), nil
	case "-Inf":
		return math.Inf(-1), nil
	case "NaN":
		return math.NaN(), nil
	}
	return strconv.ParseFloat(s, 64)
}

// Value returns the value of the series named name whose labels include
// each name=value pair of match (given as name, value, name, value…), and
// whether there was one. With several, their values are summed, so a
// metric asked for without its labels is its total.
func (m Metrics) Value(name string, match ...string) (float64, bool) {
	var sum float64
	found := false
	for _, s := range m {
		if s.Name != name || !s.has(match) {
			continue
		}
		sum += s.Value
		found = true
	}
	return sum, found
}

func (s *Series) has(match []string) bool {
	for i := 0; i+1 < len(match); i += 2 {
		ok := false
		for _, l := range s.Labels {
			if l.Name == match[i] && l.Value == match[i+1] {
				ok = true
				break
			}
		}
		if !ok {
			return false
		}
	}
	return true
}
