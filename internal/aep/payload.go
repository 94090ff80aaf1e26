package aep

import (
	"encoding/json"
)

// Attention request kinds (attention.requested data.kind).
const (
	KindPermission = "permission"
	KindInput      = "input"
	KindAuth       = "auth"
	KindReview     = "review"
	KindForm       = "form"
	KindOther      = "other"
)

// Field types of a FieldSpec.
const (
	FieldString  = "string"
	FieldNumber  = "number"
	FieldBoolean = "boolean"
	FieldSelect  = "select"
)

// Response channels (respond_via) and answer channels (via).
const (
	ViaControl = "control"
	ViaOOB     = "oob"
)

// Option is one of a request's options.
type Option struct {
	ID    string `json:"id"`
	Label string `json:"label"`
}

// Choice is one choice of a select field.
type Choice struct {
	ID    string `json:"id"`
	Label string `json:"label"`
}

// FieldSpec is one field of a kind:"form" request (AEP-0006).
type FieldSpec struct {
	ID       string   `json:"id"`
	Type     string   `json:"type"`
	Label    string   `json:"label"`
	Required bool     `json:"required,omitempty"`
	Multi    bool     `json:"multi,omitempty"`
	Other    bool     `json:"other,omitempty"`
	Choices  []Choice `json:"choices,omitempty"`
	Min      *float64 `json:"min,omitempty"`
	Max      *float64 `json:"max,omitempty"`
}

// HasChoice reports whether id is one of the field's choice ids.
func (f FieldSpec) HasChoice(id string) bool {
	for _, c := range f.Choices {
		if c.ID == id {
			return true
		}
	}
	return false
}

// Values is an answer's values map: field id -> value. Values decoded by
// this package hold string, json.Number, bool, []any (of those) or, for
// hostile input, anything else JSON allows.
type Values map[string]any

// Request is attention.requested data.
type Request struct {
	Kind       string          `json:"kind"`
	Prompt     string          `json:"prompt"`
	Options    []Option        `json:"options,omitempty"`
	Fields     []FieldSpec     `json:"fields,omitempty"`
	ExpiresAt  string          `json:"expires_at,omitempty"`
	RespondVia []string        `json:"respond_via,omitempty"`
	Context    json.RawMessage `json:"context,omitempty"`
}

// Controllable reports whether the request may be answered over control:
// respond_via absent, or naming "control" (AEP-0008).
func (r Request) Controllable() bool {
	if r.RespondVia == nil {
		return true
	}
	for _, v := range r.RespondVia {
		if v == ViaControl {
			return true
		}
	}
	return false
}

// Answer is the answer member of control.attention.respond and
// attention.answered: option, text and/or values.
//
// A non-nil Values is always encoded, even empty: a form answered with
// every optional field left blank is `"values":{}`, not a missing member.
type Answer struct {
	Option string  `json:"option,omitempty"`
	Text   *string `json:"text,omitempty"`
	Values Values  `json:"values,omitempty"`
}

// MarshalJSON encodes the answer, keeping an empty, non-nil Values.
func (a Answer) MarshalJSON() ([]byte, error) {
	type plain Answer
	if a.Values == nil || len(a.Values) > 0 {
		return json.Marshal(plain(a))
	}
	return json.Marshal(struct {
		plain
		Values Values `json:"values"`
	}{plain(a), a.Values})
}

// Answered is attention.answered data.
type Answered struct {
	Answer Answer `json:"answer"`
	By     string `json:"by,omitempty"`
	Via    string `json:"via,omitempty"`
}

// Resolutions of attention.resolved.
const (
	ResolutionAnswered  = "answered"
	ResolutionAuto      = "auto"
	ResolutionDismissed = "dismissed"
)

// Resolved is attention.resolved data.
type Resolved struct {
	Resolution string `json:"resolution"`
	LatencyMS  *int64 `json:"latency_ms,omitempty"`
}

// Timeout is attention.timeout data.
type Timeout struct {
	AfterMS *int64 `json:"after_ms,omitempty"`
}

// Routed is attention.routed data.
type Routed struct {
	To  string `json:"to,omitempty"`
	Via string `json:"via,omitempty"`
}

// Respond is control.attention.respond data.
type Respond struct {
	Answer Answer `json:"answer"`
}

// Accepted is control.accepted data (empty).
type Accepted struct{}

// Nack reasons of control.rejected.
const (
	ReasonUnsupported  = "unsupported"
	ReasonUnauthorized = "unauthorized"
	ReasonBusy         = "busy"
	ReasonRefused      = "refused"
	ReasonInvalid      = "invalid"
)

// Rejected is control.rejected data.
type Rejected struct {
	Reason string `json:"reason"`
	Detail string `json:"detail,omitempty"`
}

// Cancel is control.cancel data.
type Cancel struct {
	Scope  string `json:"scope"`
	Reason string `json:"reason,omitempty"`
}
