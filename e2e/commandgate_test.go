package e2e

import (
	"context"
	"sync"
)

// commandGate decides when the demo agent handles each command it
// receives (agent.Config.Commands): at once, set aside until resumed
// (hold: a stopped process, continued), or dropped unread (stall: as
// commands are lost with a relay that dies holding them for a stalled
// agent). Connection, pings and the agent's own events go on.
type commandGate struct {
	mu       sync.Mutex
	stalled  bool
	holding  bool
	dropped  int
	held     []func()
	droppedC chan struct{} // closed and replaced at each drop
}

func newCommandGate() *commandGate { return &commandGate{droppedC: make(chan struct{})} }

// deliver is agent.Config.Commands.
func (g *commandGate) deliver(handle func()) {
	g.mu.Lock()
	switch {
	case g.holding:
		g.held = append(g.held, handle)
		g.mu.Unlock()
	case g.stalled:
		g.dropped++
		close(g.droppedC)
		g.droppedC = make(chan struct{})
		g.mu.Unlock()
	default:
		g.mu.Unlock()
		handle()
	}
}

// stall drops every command until resume is called.
func (g *commandGate) stall() (resume func()) {
	g.mu.Lock()
	g.stalled = true
	g.mu.Unlock()
	return func() {
		g.mu.Lock()
		g.stalled = false
		g.mu.Unlock()
	}
}

// hold sets every command aside until resume, which then handles them in
// arrival order (decision, ack, outcome).
func (g *commandGate) hold() (resume func()) {
	g.mu.Lock()
	g.holding = true
	g.mu.Unlock()
	return func() {
		g.mu.Lock()
		g.holding = false
		held := g.held
		g.held = nil
		g.mu.Unlock()
		for _, handle := range held {
			handle()
		}
	}
}

// awaitDropped waits until n commands were dropped while stalled, and
// returns how many were.
func (g *commandGate) awaitDropped(ctx context.Context, n int) (int, error) {
	for {
		g.mu.Lock()
		dropped, wake := g.dropped, g.droppedC
		g.mu.Unlock()
		if dropped >= n {
			return dropped, nil
		}
		select {
		case <-ctx.Done():
			return dropped, ctx.Err()
		case <-wake:
		}
	}
}
