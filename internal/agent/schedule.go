package agent

import (
	"context"
	"sort"
	"time"
)

// task is work due at a time: a request's expiry, an out-of-band answer,
// the next Every tick. It runs with the agent's lock held.
type task struct {
	due time.Time
	fn  func(now time.Time)
}

// scheduleLocked adds fn, due d after now.
func (a *Agent) scheduleLocked(now time.Time, d time.Duration, fn func(now time.Time)) {
	t := task{due: now.Add(d), fn: fn}
	i := sort.Search(len(a.tasks), func(i int) bool { return a.tasks[i].due.After(t.due) })
	a.tasks = append(a.tasks, task{})
	copy(a.tasks[i+1:], a.tasks[i:])
	a.tasks[i] = t
	select {
	case a.taskWake <- struct{}{}:
	default:
	}
}

// runDueLocked runs every task due at or before now, in due order
// (including tasks those tasks schedule, when already due).
func (a *Agent) runDueLocked(now time.Time) {
	for len(a.tasks) > 0 && !a.tasks[0].due.After(now) {
		t := a.tasks[0]
		a.tasks[0] = task{}
		a.tasks = a.tasks[1:]
		t.fn(now)
	}
}

// scheduleLoop runs tasks when they fall due until ctx ends.
func (a *Agent) scheduleLoop(ctx context.Context) {
	timer := time.NewTimer(time.Hour)
	defer timer.Stop()
	for {
		a.mu.Lock()
		a.runDueLocked(a.cfg.Now())
		var next time.Time
		has := len(a.tasks) > 0
		if has {
			next = a.tasks[0].due
		}
		a.mu.Unlock()

		timer.Stop()
		var fire <-chan time.Time
		if has {
			timer.Reset(max(next.Sub(a.cfg.Now()), 0))
			fire = timer.C
		}
		select {
		case <-ctx.Done():
			return
		case <-fire:
		case <-a.taskWake:
		}
	}
}
