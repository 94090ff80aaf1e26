package inbox

import (
	"encoding/json"
	"net/url"
	"slices"

	"github.com/aepforms/aepforms/internal/aep"
)

// cloneCard deep-copies c so callers cannot reach the inbox's state.
func cloneCard(c *Card) Card {
	out := *c
	out.Request = cloneRequest(c.Request)
	out.Routes = slices.Clone(c.Routes)
	out.Responders = slices.Clone(c.Responders)
	out.Routing.Steps = slices.Clone(c.Routing.Steps)
	out.RuleMiss = cloneRuleMiss(c.RuleMiss)
	out.LatencyMS = clonePtr(c.LatencyMS)
	out.TimeoutMS = clonePtr(c.TimeoutMS)
	if c.Recorded != nil {
		o := *c.Recorded
		o.Answer = cloneAnswer(o.Answer)
		out.Recorded = &o
	}
	if c.Submission != nil {
		s := cloneSubmission(*c.Submission)
		out.Submission = &s
	}
	if c.Peer != nil {
		s := cloneSubmission(*c.Peer)
		out.Peer = &s
	}
	return out
}

func cloneRequest(r aep.Request) aep.Request {
	r.Options = slices.Clone(r.Options)
	r.RespondVia = slices.Clone(r.RespondVia)
	r.Context = json.RawMessage(slices.Clone([]byte(r.Context)))
	if r.Fields != nil {
		fs := make([]aep.FieldSpec, len(r.Fields))
		for i, f := range r.Fields {
			f.Choices = slices.Clone(f.Choices)
			f.Min, f.Max = clonePtr(f.Min), clonePtr(f.Max)
			fs[i] = f
		}
		r.Fields = fs
	}
	return r
}

func cloneSubmission(s Submission) Submission {
	s.Answer = cloneAnswer(s.Answer)
	s.Fields = cloneRequest(aep.Request{Fields: s.Fields}).Fields
	s.Command = slices.Clone(s.Command)
	s.Options = slices.Clone(s.Options)
	if s.Recorded != nil {
		r := *s.Recorded
		r.Answer = cloneAnswer(r.Answer)
		s.Recorded = &r
	}
	if s.Form != nil {
		f := make(url.Values, len(s.Form))
		for k, v := range s.Form {
			f[k] = slices.Clone(v)
		}
		s.Form = f
	}
	return s
}

func cloneAnswer(a aep.Answer) aep.Answer {
	a.Text = clonePtr(a.Text)
	if a.Values != nil {
		v := make(aep.Values, len(a.Values))
		for k, x := range a.Values {
			v[k] = cloneJSON(x)
		}
		a.Values = v
	}
	return a
}

// cloneJSON deep-copies a decoded JSON value (arrays and objects; scalars
// are immutable).
func cloneJSON(x any) any {
	switch t := x.(type) {
	case []any:
		out := make([]any, len(t))
		for i, e := range t {
			out[i] = cloneJSON(e)
		}
		return out
	case map[string]any:
		out := make(map[string]any, len(t))
		for k, e := range t {
			out[k] = cloneJSON(e)
		}
		return out
	}
	return x
}

func clonePtr[T any](p *T) *T {
	if p == nil {
		return nil
	}
	v := *p
	return &v
}
