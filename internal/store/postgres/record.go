package postgres

import (
	"errors"

	"github.com/jackc/pgx/v5/pgconn"

	"github.com/aepforms/aepforms/internal/inbox"
)

// Record, Settle and the other answer writes and reads are
// sqldb.Answers', each bounded by Options.WriteTimeout.
var (
	_ inbox.Journal     = (*Journal)(nil)
	_ inbox.MarkJournal = (*Journal)(nil)
)

// isLive reports the refusal of submissions_live, the one live
// submission per request.
func isLive(err error) bool {
	var pe *pgconn.PgError
	return errors.As(err, &pe) && pe.Code == "23505" && pe.ConstraintName == "submissions_live"
}
