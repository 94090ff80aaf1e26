package agent

import "github.com/aepforms/aepforms/internal/aep"

// Stall makes the agent deaf to commands until the returned resume is
// called: each command that arrives meanwhile is dropped unread, neither
// recorded, acknowledged nor executed, as commands are lost with a relay
// that dies holding them for a stalled agent. It lets a test hold
// answers in flight (no ack) across a relay outage; Stalled counts what
// was dropped. Connection, pings and the agent's own events go on.
func (a *Agent) Stall() (resume func()) {
	a.mu.Lock()
	a.stalled = true
	a.mu.Unlock()
	return func() {
		a.mu.Lock()
		a.stalled = false
		a.mu.Unlock()
	}
}

// Stalled returns how many commands the agent dropped while stalled.
func (a *Agent) Stalled() int {
	a.mu.Lock()
	defer a.mu.Unlock()
	return a.dropped
}

// Hold makes the agent set aside every command that arrives until the
// returned resume is called, which then handles them in arrival order
// (decision, ack, outcome), as a stopped process does when it is
// continued. It lets a test hold an answer past its ack window and then
// let the agent act on it late.
func (a *Agent) Hold() (resume func()) {
	a.mu.Lock()
	a.holding = true
	a.mu.Unlock()
	return func() {
		a.mu.Lock()
		a.holding = false
		held := a.held
		a.held = nil
		a.mu.Unlock()
		for _, h := range held {
			a.handleCommand(h.raw, h.cmd)
		}
	}
}

// heldCommand is one command set aside by Hold.
type heldCommand struct {
	raw []byte
	cmd *aep.Event
}
