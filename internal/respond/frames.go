package respond

import (
	"encoding/json"
	"strings"

	"github.com/aepforms/aepforms/internal/aep"
)

// The WebSocket frames this client writes and reads (AEP-0003 §2, §4, §6.5).

type helloFrame struct {
	Type         string          `json:"type"`
	Versions     []string        `json:"versions"`
	Role         string          `json:"role"`
	Identity     identity        `json:"identity"`
	Capabilities json.RawMessage `json:"capabilities"`
}

type identity struct {
	Agent    string `json:"agent"`
	Instance string `json:"instance,omitempty"`
}

type subscribeFrame struct {
	Type   string         `json:"type"`
	ID     string         `json:"id"`
	Filter ackFilter      `json:"filter"`
	From   []fromPosition `json:"from,omitempty"`
}

// ackFilter is the attr-match filter for one command's acks: the target
// session, the two ack types, and cause = the command id.
type ackFilter struct {
	Session string   `json:"session"`
	Type    []string `json:"type"`
	Cause   string   `json:"cause"`
}

type fromPosition struct {
	Session string `json:"session"`
	Epoch   int64  `json:"epoch"`
	Seq     int64  `json:"seq"`
}

type idFrame struct {
	Type string `json:"type"`
	ID   string `json:"id"`
}

type pingFrame struct {
	Type string          `json:"type"`
	T    json.RawMessage `json:"t"`
}

type closingFrame struct {
	Type      string     `json:"type"`
	Reason    string     `json:"reason"`
	Delivered []struct{} `json:"delivered"`
}

// inFrame is any frame the relay sends, decoded loosely: unknown members
// are ignored.
type inFrame struct {
	Type         string                     `json:"type"`
	ID           string                     `json:"id"`
	Cause        string                     `json:"cause"`
	Code         string                     `json:"code"`
	Detail       string                     `json:"detail"`
	Versions     []string                   `json:"versions"`
	Capabilities map[string]json.RawMessage `json:"capabilities"`
	Entries      []RosterEntry              `json:"entries"`
	T            json.RawMessage            `json:"t"`
	Reason       string                     `json:"reason"`
}

// RosterEntry is one live claim in the relay's roster (AEP-0003 §4.1).
type RosterEntry struct {
	Session  string          `json:"session"`
	Agent    string          `json:"agent,omitempty"`
	Instance string          `json:"instance,omitempty"`
	Control  *ControlDecl    `json:"control,omitempty"`
	Emits    json.RawMessage `json:"emits,omitempty"`
}

// ControlDecl is a claimant's declared capabilities.control.
type ControlDecl struct {
	Accepts     []string `json:"accepts,omitempty"`
	AckWindowMS *int64   `json:"ack_window_ms,omitempty"`
}

// accepts reports whether the declaration lists command type t.
func (d *ControlDecl) accepts(t string) bool {
	if d == nil {
		return false
	}
	for _, a := range d.Accepts {
		if a == t {
			return true
		}
	}
	return false
}

// isEvent reports whether a frame's type names an event (it has a dot)
// rather than a connection frame.
func isEvent(typ string) bool { return strings.Contains(typ, ".") }

// ack types.
const (
	typeRespond  = "control.attention.respond"
	typeAccepted = "control.accepted"
	typeRejected = "control.rejected"
)

// ackResult is what settles one transmission of a command: an ack event
// from the target or a cause-matched relay error frame.
type ackResult struct {
	event *aep.Event // control.accepted or control.rejected
	code  string     // relay error code when event is nil
	detl  string     // relay error detail
}
