package measure

import (
	"context"
	"fmt"
	"sync"

	"lnk.dev/linkharness/loadgen/drive"
)

// send sends count messages to every agent, round after round, at most
// Concurrency at once. With must, the first error ends the run (a harness
// that cannot answer a warm-up message cannot be measured); otherwise
// errors are counted.
func (r *caseRun) send(ctx context.Context, prefix string, count int, must bool) error {
	ctx, cancel := context.WithCancel(ctx)
	defer cancel()
	s := &sending{r: r, prefix: prefix, must: must, total: count * len(r.agents), cancel: cancel}
	s.answered.L = &s.mu
	jobs := make(chan sendJob)
	var wg sync.WaitGroup
	for range min(r.cfg.Concurrency, s.total) {
		wg.Go(func() {
			for j := range jobs {
				s.one(ctx, j)
			}
		})
	}
	s.feed(ctx, jobs, count)
	wg.Wait()
	if must {
		// The warm-up's errors are not the measurement's.
		for _, u := range r.units {
			clear(u.replies.errors)
			clear(u.replies.firstErr)
		}
	}
	if s.failure != nil {
		return s.failure
	}
	return ctx.Err()
}

// sending is one call of send under way, shared by its senders.
type sending struct {
	r      *caseRun
	prefix string // of the messages' ids
	must   bool   // the first error ends the sending
	total  int    // messages to send
	cancel context.CancelFunc

	mu       sync.Mutex
	answered sync.Cond // broadcast each time done grows; its L is &mu
	done     int       // messages answered or failed
	failure  error     // with must, the first error
}

// sendJob is one message to send: the nth to an agent, the kth of unit u.
type sendJob struct {
	u    *unitRun
	k    int // the agent's index in its unit
	name string
	n    int // the message's number, from 1
}

// feed hands out every agent's messages, round after round, until all are
// sent or ctx ends, then closes jobs: an agent's next message goes once
// every agent's last is answered, so each continues its conversation.
func (s *sending) feed(ctx context.Context, jobs chan<- sendJob, count int) {
	defer close(jobs)
	r := s.r
	for n := 1; n <= count; n++ {
		for _, u := range r.units {
			for k, ai := range u.agents {
				select {
				case jobs <- sendJob{u, k, r.agents[ai].Name, n}:
				case <-ctx.Done():
					return
				}
			}
		}
		s.wait(n * len(r.agents))
	}
}

// wait returns once want messages are answered or failed. Every message
// handed out ends, answered, failed, or at its timeout.
func (s *sending) wait(want int) {
	s.mu.Lock()
	defer s.mu.Unlock()
	for s.done < want {
		s.answered.Wait()
	}
}

// one sends one message and counts what came of it: its latency, or its
// error.
func (s *sending) one(ctx context.Context, j sendJob) {
	mctx, cancel := context.WithTimeout(ctx, s.r.cfg.Timeout)
	rep, err := j.u.unit.Send(mctx, j.name, Thread, drive.Message{
		ID:   fmt.Sprintf("%s%d", s.prefix, j.n),
		Text: fmt.Sprintf("Hello, this is message %d of the measurement. Please answer briefly.", j.n),
	})
	cancel()
	s.mu.Lock()
	s.done++
	if err != nil {
		if s.must && s.failure == nil {
			s.failure = err
			s.cancel()
		}
		j.u.replies.errors[j.k]++
		if j.u.replies.firstErr[j.k] == "" {
			j.u.replies.firstErr[j.k] = err.Error()
		}
	} else if !s.must {
		j.u.replies.latencies[j.k] = append(j.u.replies.latencies[j.k], rep.Latency.Seconds())
	}
	done := s.done
	s.answered.Broadcast()
	s.mu.Unlock()
	s.r.pr.Step(done, s.total)
}
