// Package agent is the demo agent: a control-capable AEP emitter that opens
// one session per scenario on a relay's WebSocket, asks real form (and
// permission, input, other) requests, and behaves as the AEP-0004 control
// profile says a target does: it declares what it accepts, dedupes commands
// on (source, id), makes exactly one ack decision per command and re-emits
// the recorded ack byte-identically on redelivery, rejects invalid answers
// and emits the outcome events of accepted ones.
//
// The agent records every command it receives (Record) so end-to-end tests
// can assert exactly what reached it, and offers Changed, Until and
// WaitRequest to wait for its state without sleeping.
package agent

import (
	"context"
	"errors"
	"log/slog"
	"sync"
	"sync/atomic"
	"time"

	"github.com/aepforms/aepforms/internal/aep"
)

// accepts is the command set the agent declares in hello
// (capabilities.control.accepts); any other command is nacked unsupported.
var accepts = []string{"control.attention.respond", "control.cancel"}

// ErrRunning is returned by a second concurrent or repeated Run.
var ErrRunning = errors.New("agent: Run called twice")

// ErrUnauthorized is returned by Run when the relay refuses the agent's
// credentials (HTTP 401/403 at the WebSocket handshake).
var ErrUnauthorized = errors.New("agent: relay refused the token")

// Agent is the demo agent. Create it with New and start it with Run; the
// accessor methods are safe to call from any goroutine at any time.
type Agent struct {
	// flooding is set while floodLocked opens a session (under mu);
	// floodAsked counts the questions those sessions asked.
	flooding   bool
	floodAsked int
	// permAsked counts the permission requests asked (PermissionPrompts).
	permAsked int
	cfg       Config
	err       error // a config error, reported by Run
	log       *slog.Logger
	scenarios []*scenario

	mu         sync.Mutex
	sessions   []*session
	byID       map[string]*session
	commands   map[aep.Key]*Received
	order      []aep.Key // dedupe entries, oldest first
	queue      []*aep.Event
	tasks      []task
	started    bool
	stopping   bool
	extraNext  int // rotation index into RepeatableScenarios
	rejectNext int // alternates the reject-rate reasons
	changed    chan struct{}

	wake     chan struct{} // the writer: the queue grew
	taskWake chan struct{} // the scheduler: a task was added
	ran      atomic.Bool
}

// New returns an agent for cfg (zero fields take their defaults). A config
// it cannot run with is reported by Run.
func New(cfg Config) *Agent {
	cfg = cfg.withDefaults()
	a := &Agent{
		cfg:      cfg,
		log:      cfg.Logger,
		byID:     make(map[string]*session),
		commands: make(map[aep.Key]*Received),
		changed:  make(chan struct{}),
		wake:     make(chan struct{}, 1),
		taskWake: make(chan struct{}, 1),
	}
	if err := cfg.validate(); err != nil {
		a.err = err
		return a
	}
	a.scenarios, _ = resolveScenarios(cfg.Scenarios) // validated
	return a
}

// Config returns the configuration in effect, defaults applied.
func (a *Agent) Config() Config { return a.cfg }

// Run connects to the relay, opens the scenarios' sessions once the first
// hello is answered, and serves commands until ctx ends; it reconnects with
// backoff whenever the relay goes away. When ctx ends it closes every open
// session (pending requests dismissed, runs cancelled, session.ended) and
// gives the connection DrainTimeout to deliver that. It returns nil then,
// or an error for a bad config or refused credentials. Run may be called
// once.
func (a *Agent) Run(ctx context.Context) error {
	if a.err != nil {
		return a.err
	}
	if !a.ran.CompareAndSwap(false, true) {
		return ErrRunning
	}
	a.log.Info("demo agent starting", "relay", a.cfg.socketURL(), "agent", a.cfg.Agent,
		"instance", a.cfg.Instance, "capture", a.cfg.Capture.String(), "scenarios", len(a.scenarios))

	schedCtx, stopSched := context.WithCancel(ctx)
	connCtx, stopConn := context.WithCancel(context.WithoutCancel(ctx))
	var wg sync.WaitGroup
	wg.Go(func() { a.scheduleLoop(schedCtx) })
	connDone := make(chan error, 1)
	wg.Go(func() { connDone <- a.connectLoop(connCtx) })

	var err error
	select {
	case <-ctx.Done():
		stopSched()
		if left := a.drain(); left == 0 {
			ended := 0
			for _, s := range a.Sessions() {
				if !s.Open {
					ended++
				}
			}
			a.log.Info("demo agent stopped", "sessions_ended", ended)
		}
	case err = <-connDone:
		stopSched()
	}
	stopConn()
	wg.Wait()
	return err
}

// drain closes every session and waits up to DrainTimeout for the queue to
// reach the relay. It returns how many events were left undelivered
// (warned about), 0 when all went or DrainTimeout is negative.
func (a *Agent) drain() int {
	a.mu.Lock()
	a.stopping = true
	a.closeAllLocked(a.cfg.Now())
	a.mu.Unlock()
	if a.cfg.DrainTimeout < 0 {
		return 0
	}
	deadline := time.NewTimer(a.cfg.DrainTimeout)
	defer deadline.Stop()
	for {
		ch := a.Changed()
		a.mu.Lock()
		n := len(a.queue)
		a.mu.Unlock()
		if n == 0 {
			return 0
		}
		select {
		case <-ch:
		case <-deadline.C:
			a.log.Warn("demo agent stopping with undelivered events", "events", n)
			return n
		}
	}
}

// Sessions returns a snapshot of every session the agent opened, in the
// order it opened them.
func (a *Agent) Sessions() []SessionInfo {
	a.mu.Lock()
	defer a.mu.Unlock()
	out := make([]SessionInfo, 0, len(a.sessions))
	for _, s := range a.sessions {
		out = append(out, s.info())
	}
	return out
}

// Changed returns a channel closed at the next change of the agent's state
// (a session, request, command record or delivery). Take it, read the
// state, then wait on it.
func (a *Agent) Changed() <-chan struct{} {
	a.mu.Lock()
	defer a.mu.Unlock()
	return a.changed
}

// changedLocked wakes everyone waiting on Changed.
func (a *Agent) changedLocked() {
	close(a.changed)
	a.changed = make(chan struct{})
}

// Until waits until cond (called without the agent's lock held, so it may
// call Sessions and Record) returns true, or ctx ends.
func (a *Agent) Until(ctx context.Context, cond func() bool) error {
	for {
		ch := a.Changed()
		if cond() {
			return nil
		}
		select {
		case <-ch:
		case <-ctx.Done():
			return ctx.Err()
		}
	}
}

// WaitRequest waits until a session of scenario has a pending request that
// reached the relay, and returns the newest such session and request.
func (a *Agent) WaitRequest(ctx context.Context, scenario string) (SessionInfo, RequestInfo, error) {
	var s SessionInfo
	var r RequestInfo
	err := a.Until(ctx, func() bool {
		ss := a.Sessions()
		for i := len(ss) - 1; i >= 0; i-- {
			if ss[i].Scenario != scenario {
				continue
			}
			for j := len(ss[i].Requests) - 1; j >= 0; j-- {
				q := ss[i].Requests[j]
				if q.State == StatePending && q.Delivered {
					s, r = ss[i], q
					return true
				}
			}
		}
		return false
	})
	return s, r, err
}
