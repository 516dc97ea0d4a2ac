package measure

import (
	"fmt"
	"io"
	"os"
	"strings"
	"sync"
	"time"
)

// progress tells a person how far a run is: on a terminal a bar redrawn in
// place, elsewhere a line per phase. A nil *progress says nothing. It is
// safe for concurrent use.
type progress struct {
	w   io.Writer
	tty bool

	mu       sync.Mutex
	phase    string
	drawn    time.Time // when the bar was last drawn
	barShown bool
}

// newProgress returns a progress writing to w, nil for no w. The bar is
// drawn only when w is a terminal.
func newProgress(w io.Writer) *progress {
	if w == nil {
		return nil
	}
	p := &progress{w: w}
	if f, ok := w.(*os.File); ok {
		if fi, err := f.Stat(); err == nil && fi.Mode()&os.ModeCharDevice != 0 {
			p.tty = true
		}
	}
	return p
}

// Phase starts a phase of the run.
func (p *progress) Phase(format string, args ...any) {
	if p == nil {
		return
	}
	p.mu.Lock()
	defer p.mu.Unlock()
	p.clearBar()
	p.phase = fmt.Sprintf(format, args...)
	fmt.Fprintf(p.w, "lnk measure: %s\n", p.phase)
}

// barWidth is the bar's width in characters.
const barWidth = 30

// Step says done of total steps of the phase are done. On a terminal the
// bar is redrawn at most ten times a second, and at the end.
func (p *progress) Step(done, total int) {
	if p == nil || !p.tty || total <= 0 {
		return
	}
	p.mu.Lock()
	defer p.mu.Unlock()
	now := time.Now()
	if done < total && now.Sub(p.drawn) < 100*time.Millisecond {
		return
	}
	p.drawn = now
	n := done * barWidth / total
	fmt.Fprintf(p.w, "\r  [%s%s] %d/%d", strings.Repeat("#", n), strings.Repeat(".", barWidth-n), done, total)
	p.barShown = true
	if done >= total {
		fmt.Fprintln(p.w)
		p.barShown = false
	}
}

func (p *progress) clearBar() {
	if p.barShown {
		fmt.Fprint(p.w, "\r\033[K")
		p.barShown = false
	}
}

// Done ends the bar, if one is drawn.
func (p *progress) Done() {
	if p == nil {
		return
	}
	p.mu.Lock()
	defer p.mu.Unlock()
	if p.barShown {
		fmt.Fprintln(p.w)
		p.barShown = false
	}
}
