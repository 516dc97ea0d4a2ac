package report

// Marginal is what one more agent and one more message cost in one layout,
// read from its cases with the shortest conversation: the figure to
// compare between harnesses, since a harness serving many agents in one
// process pays its process once.
type Marginal struct {
	Layout Layout `json:"layout"`
	Agents []int  `json:"agents"` // the counts of agents it is read from

	// IdleMemoryPerAgent is the slope of the processes' idle memory,
	// summed, against the count of agents (least squares): the memory one
	// more idle agent adds. IdleMemoryBase is the line's value at no
	// agent: the process itself. With one count of agents, the slope is
	// the memory divided by the count, and the base 0.
	IdleMemoryPerAgent Memory `json:"idle_memory_per_agent"`
	IdleMemoryBase     Memory `json:"idle_memory_base"`

	// FreshMemoryPerAgent and FreshMemoryBase are the same line drawn
	// through the processes' memory before any message (awake; no
	// collection can be asked of a process then), and Warmup the messages
	// each agent answered before IdleMemoryPerAgent's sample.
	FreshMemoryPerAgent Memory `json:"fresh_memory_per_agent"`
	FreshMemoryBase     Memory `json:"fresh_memory_base"`
	Warmup              int    `json:"warmup"`

	// AsleepFreshPerAgent and AsleepWorkedPerAgent are the line through
	// the processes' memory with every agent asleep, before any message
	// and after the warm-up, when the layout's agents sleep.
	AsleepFreshPerAgent  *Memory `json:"asleep_fresh_per_agent,omitempty"`
	AsleepWorkedPerAgent *Memory `json:"asleep_worked_per_agent,omitempty"`

	// IdleCPU and AsleepCPU are the processes' CPU seconds per second
	// over the quiet window, awake and asleep, at each count of Agents.
	IdleCPU   []float64 `json:"idle_cpu"`
	AsleepCPU []float64 `json:"asleep_cpu,omitempty"`

	// CPUPerMessage is all the processes' CPU over every measured message
	// of these cases, divided by the messages: the CPU one more message
	// costs.
	CPUPerMessage float64 `json:"cpu_per_message"`
	Messages      int     `json:"messages"`
}

// TotalOf sums the agents' shares of their processes: what the case's
// processes cost together.
func TotalOf(costs []AgentCost) Total {
	var t Total
	var cpu float64
	var msgs int
	for i := range costs {
		c := &costs[i]
		t.IdleMemory.RSS += c.Idle.RSS
		t.IdleMemory.PSS += c.Idle.PSS
		t.IdleMemory.Anon += c.Idle.Anon
		t.StartMemory.RSS += c.Start.RSS
		t.StartMemory.PSS += c.Start.PSS
		t.StartMemory.Anon += c.Start.Anon
		t.IdleCPU += c.Idle.CPU
		// An agent's CPU per message is its process's; weighted by the
		// agent's messages, the sum is every process's CPU.
		cpu += c.PerMessage.CPU * float64(c.PerMessage.MessagesCounted)
		msgs += c.PerMessage.MessagesCounted
	}
	if msgs > 0 {
		t.CPUPerMessage = cpu / float64(msgs)
	}
	return t
}

// Marginals returns each layout's Marginal from the cases, in the order of
// layouts; a one-agent case counts in every layout that has none of its
// own.
func Marginals(cases []Case, layouts []Layout) []Marginal {
	minLen := -1
	for _, c := range cases {
		if minLen < 0 || c.Length < minLen {
			minLen = c.Length
		}
	}
	var out []Marginal
	for _, lay := range layouts {
		own := false
		for _, c := range cases {
			own = own || c.Length == minLen && c.Agents == 1 && c.Layout == lay
		}
		m := Marginal{Layout: lay}
		var xs []float64
		var rss, pss, anon, frss, fpss, fanon, arss, apss, aanon, wrss, wpss, wanon []float64
		var cpu float64
		asleep := true
		for _, c := range cases {
			if c.Length != minLen || c.Layout != lay && (c.Agents > 1 || own) || c.Messages == 0 {
				continue
			}
			m.Agents = append(m.Agents, c.Agents)
			m.Warmup = c.Warmup
			xs = append(xs, float64(c.Agents))
			rss = append(rss, c.Total.IdleMemory.RSS)
			pss = append(pss, c.Total.IdleMemory.PSS)
			anon = append(anon, c.Total.IdleMemory.Anon)
			frss = append(frss, c.Total.StartMemory.RSS)
			fpss = append(fpss, c.Total.StartMemory.PSS)
			fanon = append(fanon, c.Total.StartMemory.Anon)
			m.IdleCPU = append(m.IdleCPU, c.Total.IdleCPU)
			if a := c.Asleep; a != nil {
				arss, apss, aanon = append(arss, a.Fresh.RSS), append(apss, a.Fresh.PSS), append(aanon, a.Fresh.Anon)
				wrss, wpss, wanon = append(wrss, a.Worked.RSS), append(wpss, a.Worked.PSS), append(wanon, a.Worked.Anon)
				m.AsleepCPU = append(m.AsleepCPU, a.CPU)
			} else {
				asleep = false
			}
			cpu += c.Total.CPUPerMessage * float64(c.Messages)
			m.Messages += c.Messages
		}
		if len(xs) == 0 {
			continue
		}
		m.IdleMemoryPerAgent.RSS, m.IdleMemoryBase.RSS = line(xs, rss)
		m.IdleMemoryPerAgent.PSS, m.IdleMemoryBase.PSS = line(xs, pss)
		m.IdleMemoryPerAgent.Anon, m.IdleMemoryBase.Anon = line(xs, anon)
		m.FreshMemoryPerAgent.RSS, m.FreshMemoryBase.RSS = line(xs, frss)
		m.FreshMemoryPerAgent.PSS, m.FreshMemoryBase.PSS = line(xs, fpss)
		m.FreshMemoryPerAgent.Anon, m.FreshMemoryBase.Anon = line(xs, fanon)
		if asleep {
			var f, w Memory
			f.RSS, _ = line(xs, arss)
			f.PSS, _ = line(xs, apss)
			f.Anon, _ = line(xs, aanon)
			w.RSS, _ = line(xs, wrss)
			w.PSS, _ = line(xs, wpss)
			w.Anon, _ = line(xs, wanon)
			m.AsleepFreshPerAgent, m.AsleepWorkedPerAgent = &f, &w
		} else {
			m.AsleepCPU = nil
		}
		m.CPUPerMessage = cpu / float64(m.Messages)
		out = append(out, m)
	}
	return out
}

// line fits y = slope*x + base by least squares; with one distinct x it
// returns the mean of y/x and 0.
func line(xs, ys []float64) (slope, base float64) {
	n := float64(len(xs))
	var sx, sy, sxx, sxy float64
	for i := range xs {
		sx += xs[i]
		sy += ys[i]
		sxx += xs[i] * xs[i]
		sxy += xs[i] * ys[i]
	}
	den := n*sxx - sx*sx
	if den == 0 {
		var r float64
		for i := range xs {
			r += ys[i] / xs[i]
		}
		return r / n, 0
	}
	slope = (n*sxy - sx*sy) / den
	return slope, (sy - slope*sx) / n
}
