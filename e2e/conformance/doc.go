// Package conformance is a live AEP 0.1 conformance checker, written from the
// spec (AEP-0003 bindings, AEP-0004 control) and the protocol fixtures, not
// from any implementation. It talks to a running endpoint over real sockets
// only: HTTP emit and discovery, SSE consume, and the WebSocket duplex.
//
// Run checks a relay (Target) and RunControl checks a control-capable target
// session behind a relay (ControlTarget). Both return a Report: every check
// by name, each passing, failing (with what was got and what was wanted) or
// skipped (with why it could not run against this set-up).
//
// The checker never sleeps to wait: every wait is on a frame, an SSE item or
// a response, with the check's deadline. Where a rule says something must
// not arrive, the checker waits on a later arrival that the rule orders
// after it (a barrier), never on silence.
package conformance
