package postgres

import "github.com/aepforms/aepforms/internal/inbox"

// The resend leases and token lookups are sqldb.Answers'.
var (
	_ inbox.Leases       = (*Journal)(nil)
	_ inbox.TokenJournal = (*Journal)(nil)
)
