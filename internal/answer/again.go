package answer

import (
	"context"

	"github.com/aepforms/aepforms/internal/inbox"
)

// Resender is a Submitter that sends an owed answer (sent, no reply in
// time) again, with its own command id and bytes (*respond.Client).
// "Send again" is offered only on a UI whose Submitter is one.
type Resender interface {
	SendAgain(ctx context.Context, commandID string) error
}

// SendAgain sends card id's owed answer, command cmd, once more now: the
// same command, never a new one. An answer no longer owed (settled,
// already on its way again, replaced) or another command than the card's
// owed one sends nothing (nil): the card as it is says why.
// inbox.ErrNotFound when the card is gone; else the respond path's error.
func (s *Service) SendAgain(ctx context.Context, id inbox.CardID, cmd string) error {
	card, ok := s.cfg.Inbox.Card(id)
	if !ok {
		return inbox.ErrNotFound
	}
	re, can := s.cfg.Submitter.(Resender)
	// The verdict's SendAgain is both the offer and the acceptance.
	if vd := card.Verdict(s.cfg.Now(), s.cfg.Viewer); !can || !vd.SendAgain || vd.OwedCommand != cmd {
		return nil
	}
	return re.SendAgain(ctx, cmd)
}
