package measure

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

	// CPUPerMessage is all the processes' CPU over every measured message
	// of these cases, divided by the messages: the CPU one more message
	// costs.
	CPUPerMessage float64 `json:"cpu_per_message"`
	Messages      int     `json:"messages"`
}

// total sums the agents' shares of their processes.
func total(costs []AgentCost) Total {
	var t Total
	var cpu float64
	var msgs int
	for i := range costs {
		c := &costs[i]
		t.IdleMemory.RSS += c.Idle.RSS
		t.IdleMemory.PSS += c.Idle.PSS
		t.IdleMemory.Anon += c.Idle.Anon
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

// marginals returns each layout's Marginal from the cases, in the order of
// layouts; a one-agent case counts in every layout.
func marginals(cases []Case, layouts []Layout) []Marginal {
	minLen := -1
	for _, c := range cases {
		if minLen < 0 || c.Length < minLen {
			minLen = c.Length
		}
	}
	var out []Marginal
	for _, lay := range layouts {
		m := Marginal{Layout: lay}
		var xs []float64
		var rss, pss, anon []float64
		var cpu float64
		for _, c := range cases {
			if c.Length != minLen || c.Agents > 1 && c.Layout != lay || c.Messages == 0 {
				continue
			}
			m.Agents = append(m.Agents, c.Agents)
			xs = append(xs, float64(c.Agents))
			rss = append(rss, c.Total.IdleMemory.RSS)
			pss = append(pss, c.Total.IdleMemory.PSS)
			anon = append(anon, c.Total.IdleMemory.Anon)
			cpu += c.Total.CPUPerMessage * float64(c.Messages)
			m.Messages += c.Messages
		}
		if len(xs) == 0 {
			continue
		}
		m.IdleMemoryPerAgent.RSS, m.IdleMemoryBase.RSS = line(xs, rss)
		m.IdleMemoryPerAgent.PSS, m.IdleMemoryBase.PSS = line(xs, pss)
		m.IdleMemoryPerAgent.Anon, m.IdleMemoryBase.Anon = line(xs, anon)
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
