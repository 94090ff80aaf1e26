// Package crashpoint marks the moments on an answer's way where a crash
// matters, so the crash tests can kill the process at exactly one of them
// instead of sleeping and hoping. In a normal build Hit does nothing and
// costs a call; only a build with -tags crashpoints can stop the process
// (see armed.go).
package crashpoint

// The windows of one answer, in order. Each is a place where the process
// may die for real (power loss, kill -9); the journal must make each one
// end with the agent executing the answer once, under one command id.
const (
	// Recorded: the submission is journaled, neither the 303 written
	// nor the command let go (answer.Service.Begin, after BeginSubmission).
	Recorded = "recorded"
	// Unsent: the command is let go but not written to the relay yet
	// (respond, before the first write); the 303, written beside it,
	// may or may not be out.
	Unsent = "unsent"
	// UnsentHeld: Unsent, held (Hold) rather than killed: every answer
	// posted meanwhile is journaled and got its 303, and none of their
	// commands leaves; the test kills the process when it likes.
	UnsentHeld = "unsent-held"
	// Held: the answer is journaled and its 303 written, its command
	// held for Undo (--undo-window) and not let go yet
	// (answer.Service.Send).
	Held = "held"
	// Sent: the command is written to the relay's WebSocket, its ack not
	// yet seen (respond, after the write); the 303 may or may not be out.
	Sent = "sent"
	// SentNo303: Sent, with the post's 303 held back until the kill
	// (web Holds it): the command is out and the browser has no
	// response, so it retries the post.
	SentNo303 = "sent-no-303"
	// Acked: the agent's ack (or the relay's refusal) arrived, its
	// outcome not yet reported nor journaled (respond).
	Acked = "acked"
	// RuleClaimed: a rule (standing answer) claimed a request in the
	// journal, its answer not begun nor journaled yet (rules.Runner).
	RuleClaimed = "rule-claimed"
)

// Env is the environment variable that arms one point in a crashpoints
// build: the process kills itself (SIGKILL, no deferred cleanup) the
// first time it reaches the point of that name.
const Env = "AEPFORMS_CRASHPOINT"
