package inbox

// Reach is whether a session's agent can take an answer now, as the
// relay's roster says. The respond path reads the roster; the domain names
// the answer so every package speaks of it the same way. The zero value is
// ReachUnknown.
type Reach int

// Reach values.
const (
	ReachUnknown      Reach = iota // no roster yet (disconnected, or the relay has none)
	ReachConnected                 // one live claimant that accepts control.attention.respond
	ReachNoControl                 // one live claimant that did not declare control.attention.respond
	ReachAmbiguous                 // more than one live claimant: the relay refuses commands (ambiguous)
	ReachNotConnected              // no live claimant: a command would get no-route
)

// Known reports whether the roster says anything about the session.
func (r Reach) Known() bool { return r != ReachUnknown }

// TakesAnswers reports whether an answer sent now would reach one agent
// that takes it.
func (r Reach) TakesAnswers() bool { return r == ReachConnected }

// String names the reach for logs and view models.
func (r Reach) String() string {
	switch r {
	case ReachConnected:
		return "connected"
	case ReachNoControl:
		return "no-control"
	case ReachAmbiguous:
		return "ambiguous"
	case ReachNotConnected:
		return "not-connected"
	}
	return "unknown"
}
