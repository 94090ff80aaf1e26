package app

import (
	"context"
	"errors"

	"github.com/aepforms/aepforms/internal/inbox"
	"github.com/aepforms/aepforms/internal/respond"
	"github.com/aepforms/aepforms/web"
)

// The answers' "Send again" and held commands go on through it.
var _ web.Resender = untilStop{}

// untilStop is the respond path as the operators' answers see it. A
// command it no longer takes because serve is stopping (respond.ErrClosed)
// is no failure of the answer's: the answer stays journaled as sending,
// and the next start (or another replica, once this one's lease lapses)
// sends it, as after a crash. An answer posted while the stop lets the
// requests under way finish is one: settled failed, it was never sent at
// all. (An answer held for Undo whose window ends during the stop is not
// let go at all: answer.Config.Stopping.)
type untilStop struct{ *respond.Client }

// Submit queues s's command, or leaves it journaled when serve stops.
func (u untilStop) Submit(ctx context.Context, s inbox.Submission) error {
	if err := u.Client.Submit(ctx, s); !errors.Is(err, respond.ErrClosed) {
		return err
	}
	return nil
}
