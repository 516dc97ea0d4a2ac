package proc

import (
	"github.com/prometheus/procfs"
)

// Descendants returns the processes below pid (children, theirs, and so
// on), found by their parents in /proc.
func Descendants(pid int) []int {
	procs, err := procfs.AllProcs()
	if err != nil {
		return nil
	}
	kids := map[int][]int{}
	for _, p := range procs {
		st, err := p.Stat()
		if err != nil {
			continue
		}
		kids[st.PPID] = append(kids[st.PPID], p.PID)
	}
	var out []int
	next := []int{pid}
	for len(next) > 0 && len(out) < 10000 {
		p := next[0]
		next = next[1:]
		for _, k := range kids[p] {
			out = append(out, k)
			next = append(next, k)
		}
	}
	return out
}

// ReadTree samples pid and every process below it and sums them: CPU,
// memory (with memory set) and I/O. A process that ends meanwhile is left
// out; pid itself must be there.
func ReadTree(pid int, memory bool) (Sample, error) {
	s, err := Read(pid, memory)
	if err != nil {
		return s, err
	}
	for _, k := range Descendants(pid) {
		ks, err := Read(k, memory)
		if err != nil {
			continue
		}
		s.CPUNanos += ks.CPUNanos
		s.CPUTicks += ks.CPUTicks
		s.RSS += ks.RSS
		s.PSS += ks.PSS
		s.Anon += ks.Anon
		s.RChar += ks.RChar
		s.WChar += ks.WChar
		s.ReadBytes += ks.ReadBytes
		s.WriteBytes += ks.WriteBytes
	}
	return s, nil
}
