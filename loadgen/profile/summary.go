package profile

import (
	"errors"
	"fmt"
	"os"
	"sort"
	"strings"

	pprof "github.com/google/pprof/profile"
)

// Summary is where the harness processes spent their CPU, from the
// CPU profiles they wrote, merged.
type Summary struct {
	Profiles int     `json:"profiles"` // profiles read
	Samples  int64   `json:"samples"`  // samples taken (100 a CPU second), idle scheduling left out
	Seconds  float64 `json:"seconds"`  // CPU time sampled, idle scheduling left out
	Idle     float64 `json:"idle"`     // CPU time left out as the scheduler's idle spinning

	Flat []FuncTime `json:"flat"` // the functions most often running, most first
	Cum  []FuncTime `json:"cum"`  // the functions most often on the stack, most first

	// Largest is the largest bottleneck: the function running most often,
	// and Via the nearest function of Link Harness's own code below it on
	// the stacks where it ran most.
	Largest string `json:"largest"`
	Via     string `json:"via,omitempty"`
}

// FuncTime is one function's CPU time and its share of the sampled time.
type FuncTime struct {
	Name    string  `json:"name"`
	Seconds float64 `json:"seconds"`
	Share   float64 `json:"share"` // of Summary.Seconds, 0 to 1
}

// ownCode is the prefix of Link Harness's own functions, and main's.
const ownCode = "lnk.dev/linkharness/"

// idleFrames mark a sample as the scheduler looking for work: a stack with
// one of them is no goroutine's work, and is left out.
var idleFrames = map[string]bool{
	"runtime.findRunnable": true,
	"runtime.findrunnable": true,
	"runtime.schedule":     true,
	"runtime.stopm":        true,
	"runtime.mPark":        true,
	"runtime.sysmon":       true,
	"runtime.netpoll":      true,
}

// rootFrames are on nearly every stack and say nothing of where the time
// goes; they are left out of the cumulative ranking.
var rootFrames = map[string]bool{
	"runtime.goexit":                      true,
	"runtime.main":                        true,
	"main.main":                           true,
	"runtime.mstart":                      true,
	"runtime.mstart0":                     true,
	"runtime.mstart1":                     true,
	"runtime.systemstack":                 true,
	"runtime.mcall":                       true,
	"net/http.(*conn).serve":              true,
	"net/http.serverHandler.ServeHTTP":    true,
	"net/http.HandlerFunc.ServeHTTP":      true,
	"net/http.(*ServeMux).ServeHTTP":      true,
	"testing.tRunner":                     true,
	"runtime/pprof.profileWriter":         true,
	"runtime.gcBgMarkWorker.func2":        true,
	"runtime.(*gcControllerState).revise": true,
}

// Summarize merges the CPU profiles at paths and returns the top n
// functions by flat and by cumulative time. A missing or empty file is
// skipped (a process killed before it wrote its profile); it fails only if
// no profile could be read.
func Summarize(paths []string, n int) (*Summary, error) {
	var ps []*pprof.Profile
	var errs []error
	for _, path := range paths {
		f, err := os.Open(path)
		if err != nil {
			errs = append(errs, err)
			continue
		}
		p, err := pprof.Parse(f)
		f.Close()
		if err != nil {
			errs = append(errs, fmt.Errorf("%s: %w", path, err))
			continue
		}
		ps = append(ps, p)
	}
	if len(ps) == 0 {
		return nil, fmt.Errorf("profile: no CPU profile read: %w", errors.Join(append(errs, errors.New("none written"))...))
	}
	p, err := pprof.Merge(ps)
	if err != nil {
		return nil, fmt.Errorf("profile: merging %d CPU profiles: %w", len(ps), err)
	}
	s := summarize(p, n)
	s.Profiles = len(ps)
	return s, nil
}

func summarize(p *pprof.Profile, n int) *Summary {
	vi, ci := len(p.SampleType)-1, -1
	for i, st := range p.SampleType {
		switch st.Type {
		case "cpu":
			vi = i
		case "samples":
			ci = i
		}
	}
	s := &Summary{}
	flat := map[string]int64{}
	cum := map[string]int64{}
	via := map[string]map[string]int64{}
	var total, idle int64
	var frames []string
	seen := map[string]bool{}
	for _, smp := range p.Sample {
		if vi < 0 || vi >= len(smp.Value) {
			continue
		}
		v := smp.Value[vi]
		frames = stackOf(frames[:0], smp)
		if len(frames) == 0 || isIdle(frames) {
			idle += v
			continue
		}
		total += v
		if ci >= 0 && ci < len(smp.Value) {
			s.Samples += smp.Value[ci] // a sample stands for every identical stack
		} else {
			s.Samples++
		}
		flat[frames[0]] += v
		clear(seen)
		for _, f := range frames {
			if !seen[f] {
				seen[f] = true
				cum[f] += v
			}
		}
		if own := nearestOwn(frames); own != "" {
			if via[frames[0]] == nil {
				via[frames[0]] = map[string]int64{}
			}
			via[frames[0]][own] += v
		}
	}
	for f := range rootFrames {
		delete(cum, f)
	}
	unit := 1e-9 // nanoseconds, as Go writes CPU profiles
	if vi >= 0 && vi < len(p.SampleType) && p.SampleType[vi].Unit == "count" {
		unit = float64(p.Period) * 1e-9
	}
	s.Seconds = float64(total) * unit
	s.Idle = float64(idle) * unit
	s.Flat = top(flat, n, total, unit)
	s.Cum = top(cum, n, total, unit)
	if len(s.Flat) > 0 {
		s.Largest = s.Flat[0].Name
		s.Via = largestKey(via[s.Largest])
		if s.Via == s.Largest {
			s.Via = ""
		}
	}
	return s
}

// stackOf appends the function names of a sample's stack, leaf first, the
// functions inlined into a location before the one they were inlined in.
func stackOf(dst []string, smp *pprof.Sample) []string {
	for _, loc := range smp.Location {
		for _, l := range loc.Line {
			if l.Function != nil {
				dst = append(dst, l.Function.Name)
			}
		}
		if len(loc.Line) == 0 {
			dst = append(dst, fmt.Sprintf("0x%x", loc.Address))
		}
	}
	return dst
}

func isIdle(frames []string) bool {
	for _, f := range frames {
		if idleFrames[f] {
			return true
		}
	}
	return false
}

// nearestOwn returns the first function of Link Harness's code from the
// leaf up, main's but main.main included, or "".
func nearestOwn(frames []string) string {
	for _, f := range frames {
		if strings.HasPrefix(f, ownCode) || strings.HasPrefix(f, "main.") && f != "main.main" {
			return f
		}
	}
	return ""
}

func top(m map[string]int64, n int, total int64, unit float64) []FuncTime {
	out := make([]FuncTime, 0, len(m))
	for name, v := range m {
		ft := FuncTime{Name: name, Seconds: float64(v) * unit}
		if total > 0 {
			ft.Share = float64(v) / float64(total)
		}
		out = append(out, ft)
	}
	sort.Slice(out, func(i, j int) bool {
		if out[i].Seconds != out[j].Seconds {
			return out[i].Seconds > out[j].Seconds
		}
		return out[i].Name < out[j].Name
	})
	if len(out) > n {
		out = out[:n]
	}
	return out
}

func largestKey(m map[string]int64) string {
	best, bv := "", int64(-1)
	for k, v := range m {
		if v > bv || v == bv && k < best {
			best, bv = k, v
		}
	}
	return best
}
