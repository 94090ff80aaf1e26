package conformance

import (
	"time"

	"github.com/aepforms/aepforms/internal/aep"
)

// evType is the vendor type the checker's own probe events carry: a type no
// real emitter uses, with no payload schema to satisfy.
const evType = "x.conformance.progress.probe"

// sourceOf is the source URI of the checker's emitter identity agent.
func sourceOf(agent string) string { return "aep://conformance.invalid/agent/" + agent }

// now is the time attribute of the checker's events.
func now() string { return time.Now().UTC().Format(time.RFC3339Nano) }

// ev describes an event the checker emits; build fills the rest.
type ev struct {
	agent   string // default {prefix}-emitter
	session string
	seq     int64 // -1: no seq
	epoch   int64
	typ     string // default evType
	id      string // default a fresh one
	subject string
	cause   string
	run     string
	capture string
	sev     string
	data    any // default {"n": seq}
}

// build encodes e (json.Marshal escapes <, > and & as \u003c..., which a
// relay that re-encodes would change: the byte-identity checks rely on it).
func (r *runner) build(e ev) *aep.Event {
	if e.agent == "" {
		e.agent = r.prefix + "-emitter"
	}
	if e.typ == "" {
		e.typ = evType
	}
	if e.id == "" {
		e.id = r.uniq("id")
	}
	if e.data == nil {
		e.data = map[string]any{"n": e.seq, "note": "<probe & check>"}
	}
	env := aep.Envelope{
		ID: e.id, Type: e.typ, Time: now(), Source: sourceOf(e.agent), Agent: e.agent,
		Session: e.session, Subject: e.subject, Cause: e.cause, Run: e.run,
		Capture: e.capture, Severity: e.sev, Data: e.data,
	}
	if e.seq >= 0 && !aep.IsAgentScoped(e.typ) {
		env.Seq = aep.Int64(e.seq)
	}
	if e.epoch > 0 {
		env.Epoch = aep.Int64(e.epoch)
	}
	out, err := aep.Build(env)
	if err != nil {
		panic(err) // the checker's own events are well formed
	}
	return out
}

// seqEvents builds n probe events of session s with seq from..from+n-1.
func (r *runner) seqEvents(s string, from, n int64) []*aep.Event {
	out := make([]*aep.Event, 0, n)
	for i := from; i < from+n; i++ {
		out = append(out, r.build(ev{session: s, seq: i}))
	}
	return out
}

// command builds a control command from the checker's sender identity:
// no seq, subject and cause the request id (AEP-0004 §2, §6).
func (r *runner) command(session, typ, request string, data any) *aep.Event {
	if data == nil {
		data = map[string]any{"answer": map[string]any{"option": "allow"}}
	}
	return r.build(ev{agent: r.prefix + "-sender", session: session, seq: -1, typ: typ,
		subject: request, cause: request, capture: "metadata", data: data})
}

const respondType = "control.attention.respond"
