package agent

import (
	"time"

	"github.com/aepforms/aepforms/internal/aep"
)

// RequestState is where a request the agent raised stands.
type RequestState string

// Request states.
const (
	StatePending   RequestState = "pending"
	StateAnswered  RequestState = "answered"
	StateTimedOut  RequestState = "timeout"
	StateDismissed RequestState = "dismissed"
)

// session is one scenario session (guarded by Agent.mu).
type session struct {
	id, source string
	sc         *scenario
	capture    aep.Capture
	extra      bool // opened by Every
	flood      bool // opened by Pending: each question names its own service
	opened     time.Time
	seq        int64 // the next seq
	run        *run  // the current run; nil between runs and after the end
	runs       []string
	requests   []*request
	ended      bool
	// lastDelivered is the session's last sequenced event written to a
	// relay; a new connection re-sends it to claim the session.
	lastDelivered *aep.Event
}

// run is one run of a session.
type run struct {
	id      string
	started time.Time
}

// request is an attention.requested the agent raised.
type request struct {
	ev        *aep.Event  // the event as emitted, re-sent byte-identically
	req       aep.Request // its data as emitted (at the session's capture)
	run       string
	spec      ask
	asked     time.Time
	state     RequestState
	delivered bool
}

func (q *request) id() string { return q.ev.ID() }

// pending lists the pending requests of run runID ("" = any run).
func (s *session) pending(runID string) []*request {
	var out []*request
	for _, q := range s.requests {
		if q.state == StatePending && (runID == "" || q.run == runID) {
			out = append(out, q)
		}
	}
	return out
}

func (s *session) request(id string) *request {
	for _, q := range s.requests {
		if q.id() == id {
			return q
		}
	}
	return nil
}

// SessionInfo is a snapshot of one session the agent opened.
type SessionInfo struct {
	ID       string
	Source   string
	Scenario string
	Capture  aep.Capture
	Extra    bool     // asked by Every, after the set
	Run      string   // the running run, "" when none
	Runs     []string // every run, oldest first
	Open     bool     // false once session.ended was emitted
	Requests []RequestInfo
}

// RequestInfo is a snapshot of one request.
type RequestInfo struct {
	ID        string
	Kind      string
	Run       string
	State     RequestState
	Delivered bool   // written to a relay at least once
	Event     []byte // the attention.requested event's bytes
}

func (s *session) info() SessionInfo {
	out := SessionInfo{
		ID: s.id, Source: s.source, Scenario: s.sc.name, Capture: s.capture,
		Extra: s.extra, Runs: append([]string(nil), s.runs...), Open: !s.ended,
	}
	if s.run != nil {
		out.Run = s.run.id
	}
	for _, q := range s.requests {
		out.Requests = append(out.Requests, RequestInfo{
			ID: q.id(), Kind: q.req.Kind, Run: q.run, State: q.state,
			Delivered: q.delivered, Event: q.ev.Raw(),
		})
	}
	return out
}
