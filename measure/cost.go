package measure

import (
	"sort"

	"lnk.dev/linkharness/loadgen/drive"
	"lnk.dev/linkharness/loadgen/proc"
	"lnk.dev/linkharness/measure/report"
)

// result computes the case's figures from what was sampled.
func (r *caseRun) result(use modelUse) report.Case {
	c := report.Case{Length: r.spec.Length, Agents: r.spec.Agents, Processes: len(r.units), Layout: r.spec.Layout,
		MessagesPerAgent: r.messages, Warmup: r.cfg.Warmup}
	answered := 0
	for _, u := range r.units {
		for _, l := range u.replies.latencies {
			answered += len(l)
		}
	}
	modelPerMsg := use.Seconds / float64(max(answered, 1))
	for _, u := range r.units {
		for k, ai := range u.agents {
			cost := u.cost(k, len(u.agents), r.agents[ai].Name, modelPerMsg)
			c.PerAgent = append(c.PerAgent, cost)
			c.Messages += cost.PerMessage.MessagesCounted
			c.Errors += cost.PerMessage.Errors
			if c.FirstError == "" {
				c.FirstError = u.replies.firstErr[k]
			}
		}
	}
	sort.SliceStable(c.PerAgent, func(i, j int) bool { return agentLess(c.PerAgent[i].Name, c.PerAgent[j].Name) })
	c.Median = report.MedianOf(c.PerAgent)
	c.Total = report.TotalOf(c.PerAgent)
	if c.Messages > 0 {
		c.Model = report.ModelCost{
			Requests: float64(use.Requests) / float64(c.Messages),
			Seconds:  use.Seconds / float64(c.Messages),
			MaxBytes: float64(use.MaxBytes),
		}
	}
	if use.Requests > 0 {
		c.Model.RequestBytes = float64(use.RequestBytes) / float64(use.Requests)
	}
	for _, u := range r.units {
		if _, ok := u.unit.(drive.Sleeper); !ok {
			continue
		}
		if c.Asleep == nil {
			c.Asleep = &report.Asleep{}
		}
		a := c.Asleep
		add := func(m *report.Memory, s proc.Sample) {
			m.RSS += float64(s.RSS)
			m.PSS += float64(s.PSS)
			m.Anon += float64(s.Anon)
		}
		add(&a.Fresh, u.asleep.fresh)
		add(&a.Worked, u.asleep.worked)
		if s := u.asleep.end.Time.Sub(u.asleep.from.Time).Seconds(); s > 0 {
			a.CPU += proc.CPUSeconds(u.asleep.from, u.asleep.end) / s
			a.WindowSeconds = s
		}
		a.Woken += u.asleep.woken
		a.WakeErrors += u.asleep.wakeErrors
		if a.FirstWakeErr == "" {
			a.FirstWakeErr = u.asleep.firstWakeErr
		}
	}
	return c
}

// agentLess orders agent-2 before agent-10.
func agentLess(a, b string) bool {
	if len(a) != len(b) {
		return len(a) < len(b)
	}
	return a < b
}

// cost is the k-th of the unit's n agents' cost: the unit's process cost
// shared among its agents, and the agent's own latencies and counters.
func (u *unitRun) cost(k, n int, name string, modelPerMsg float64) report.AgentCost {
	shared := float64(n)
	lat := u.replies.latencies[k]
	msgs := len(lat)
	ac := report.AgentCost{Name: name, PID: u.unit.PID()}
	ac.Start = memory(u.fresh, shared)
	ac.Idle.Memory = memory(u.idle.worked, shared)
	if s := u.idle.end.Time.Sub(u.idle.start.Time).Seconds(); s > 0 {
		ac.Idle.CPU = proc.CPUSeconds(u.idle.start, u.idle.end) / s / shared
	}
	pm := &ac.PerMessage
	pm.MessagesCounted = msgs
	pm.Errors = u.replies.errors[k]
	if msgs == 0 {
		return ac
	}
	// The unit's messages are all its agents', and nothing else ran
	// between b and c.
	unitMsgs := 0
	for _, l := range u.replies.latencies {
		unitMsgs += len(l)
	}
	per := func(x float64) float64 { return max(x, 0) / float64(unitMsgs) }
	// The process's own CPU-time clock over every measured message: a
	// mean, as an independent count of the same span reads it.
	pm.CPU = per(proc.CPUSeconds(u.span.before, u.span.after))
	pm.ReadChars = per(d(u.span.before.RChar, u.span.after.RChar))
	pm.WrittenChars = per(d(u.span.before.WChar, u.span.after.WChar))
	pm.DiskRead = per(d(u.span.before.ReadBytes, u.span.after.ReadBytes))
	pm.DiskWritten = per(d(u.span.before.WriteBytes, u.span.after.WriteBytes))
	if uc, ok := u.unit.(drive.UsageCounter); ok {
		pm.PeakRSS = float64(uc.PeakRSS())
	}

	// The model's share of a message: as the harness counted its calls,
	// else the model server's own time.
	model := modelPerMsg
	if u.hasMetrics {
		own := countersOf(u.span.scrape2, name).minus(countersOf(u.span.scrape1, name))
		scrapeCost := countersOf(u.span.scrape1, name).minus(countersOf(u.span.scrape0, name))
		pm.StoreRead = max(own.StoreRead, 0) / float64(msgs)
		pm.StoreWritten = max(own.StoreWritten, 0) / float64(msgs)
		if own.TurnCount > 0 {
			pm.Turn = own.TurnSeconds / own.TurnCount
		}
		pm.Model = own.ModelSeconds / float64(msgs)
		pm.TurnsCounted = own.Turns
		pm.TurnErrorsCounted = own.TurnErrors
		pm.Allocs = per(own.AllocObjects - scrapeCost.AllocObjects)
		pm.AllocBytes = per(own.AllocBytes - scrapeCost.AllocBytes)
		ac.Idle.Goroutines = countersOf(u.span.scrape0, name).Goroutines
		model = pm.Model
	}
	pm.Latency = report.SpreadOf(lat)
	added := make([]float64, len(lat))
	for i, l := range lat {
		added[i] = max(l-model, 0)
	}
	pm.Added = report.SpreadOf(added)
	return ac
}

func memory(s proc.Sample, shared float64) report.Memory {
	return report.Memory{RSS: float64(s.RSS) / shared, PSS: float64(s.PSS) / shared, Anon: float64(s.Anon) / shared}
}

// d is b-a of a counter, as a float.
func d(a, b uint64) float64 {
	if b < a { // a counter that went back
		return 0
	}
	return float64(b - a)
}
