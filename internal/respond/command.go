package respond

import (
	"errors"
	"fmt"
	"slices"

	"github.com/aepforms/aepforms/internal/inbox"

	"github.com/aepforms/aepforms/internal/aep"
	"github.com/oklog/ulid/v2"
)

// command is a submission built into its wire form. raw is sent on every
// transmission, unchanged: retries resend identical bytes.
type command struct {
	sub     inbox.Submission
	id      string
	session string
	raw     []byte
	// queued is true once the command was reported
	// inbox.SubmissionQueued (no relay connection when it was due): it
	// is released (Config.Release) before its first write.
	queued bool
	// sentBefore is true for a command that may already have reached a
	// relay (owed: sent, no reply yet, sent again on a new connection;
	// or restored after a restart): without a connection it is
	// reported sending with inbox.ReasonRelayLost, never "queued", and
	// it is released (Config.Release) before it is written again.
	sentBefore bool
	// hold, when not nil, keeps the first write (and every report) back
	// until it is opened (SubmitHeld): the ack subscription is made
	// meanwhile.
	hold *gate
	// forAgent is true for a command the relay refused no-route: it
	// waits, owed, for its session's agent to be on the roster again.
	forAgent bool
}

// ErrInvalid reports a submission that cannot become a command.
var ErrInvalid = errors.New("respond: invalid submission")

// timeLayout is RFC 3339 in UTC with milliseconds.
const timeLayout = "2006-01-02T15:04:05.000Z07:00"

// build makes the control.attention.respond for s per AEP-0004 §5 and
// NOTES §5: no seq, subject and cause = the request id, capture chosen
// from the answer (never redacted).
func (c *Client) build(s inbox.Submission) (*command, error) {
	if s.Key.Session == "" || s.Key.RequestID == "" {
		return nil, fmt.Errorf("%w: session and request id are required", ErrInvalid)
	}
	if s.Answer.Option == "" && s.Answer.Text == nil && s.Answer.Values == nil {
		return nil, fmt.Errorf("%w: empty answer", ErrInvalid)
	}
	if s.CommandID == "" {
		s.CommandID = c.newCommandID()
	}
	agent := c.cfg.Agent
	if s.By != "" {
		agent += "/" + s.By
	}
	ev, err := aep.Build(aep.Envelope{
		ID:      s.CommandID,
		Type:    typeRespond,
		Subject: s.Key.RequestID,
		Time:    c.cfg.Now().UTC().Format(timeLayout),
		Source:  c.cfg.Source,
		Agent:   agent,
		Session: s.Key.Session,
		Cause:   s.Key.RequestID,
		Capture: aep.AnswerCapture(s.Answer, s.Fields).String(),
		Data:    aep.Respond{Answer: s.Answer},
	})
	if err != nil {
		return nil, fmt.Errorf("%w: %w", ErrInvalid, err)
	}
	if err := aep.ValidateEnvelope(ev); err != nil {
		return nil, fmt.Errorf("%w: %w", ErrInvalid, err)
	}
	return &command{sub: s, id: s.CommandID, session: s.Key.Session, raw: ev.Raw()}, nil
}

// Build returns the exact bytes of s's command, as Submit would send them:
// the inbox calls it (inbox.Options.Command) before it journals s, so the
// journal keeps what is sent, and a restart sends the same bytes again.
// s.CommandID must be set. It fails with ErrInvalid.
func (c *Client) Build(s inbox.Submission) ([]byte, error) {
	if s.CommandID == "" {
		return nil, fmt.Errorf("%w: no command id", ErrInvalid)
	}
	cmd, err := c.build(s)
	if err != nil {
		return nil, err
	}
	return cmd.raw, nil
}

// prebuilt is s as a command with the bytes it carries (s.Command, from
// Build), sent unchanged: nothing is rebuilt, so a resend after a restart
// is byte for byte the command first journaled.
func prebuilt(s inbox.Submission) (*command, error) {
	if s.CommandID == "" || s.Key.Session == "" {
		return nil, fmt.Errorf("%w: a built command needs its command id and session", ErrInvalid)
	}
	return &command{sub: s, id: s.CommandID, session: s.Key.Session, raw: slices.Clone(s.Command)}, nil
}

// newCommandID mints a ULID for a command envelope from the client's clock,
// for a submission that came without one. It is safe for concurrent use.
func (c *Client) newCommandID() string {
	return ulid.MustNew(ulid.Timestamp(c.cfg.Now()), ulid.DefaultEntropy()).String()
}
