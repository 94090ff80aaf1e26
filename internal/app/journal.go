package app

import (
	"errors"
	"fmt"
	"log/slog"
	"time"

	"github.com/aepforms/aepforms/internal/inbox"
	"github.com/aepforms/aepforms/internal/journal/sqlite"
)

var _ inbox.Journal = (*sqlite.Journal)(nil)

// pruneInterval is how often the journal drops answers past
// --history-retention.
const pruneInterval = time.Hour

// openJournal opens the answer journal at path (--db). Its errors name
// the file, the way out, and the flag that chooses the file.
func openJournal(path string, logger *slog.Logger) (*sqlite.Journal, error) {
	if path == "" {
		return nil, errors.New("no place for the answer journal: set --db, AEPFORMS_DB, XDG_STATE_HOME or HOME")
	}
	j, err := sqlite.Open(path, sqlite.Options{})
	switch {
	case errors.Is(err, sqlite.ErrLocked):
		return nil, fmt.Errorf("%w. Stop that one, or give this one its own journal with --db FILE (env AEPFORMS_DB)", err)
	case err != nil:
		return nil, fmt.Errorf("%w (the journal's file is chosen with --db or AEPFORMS_DB)", err)
	}
	id := j.Identity()
	logger.Info("answer journal: "+j.Path(), "source", id.Source)
	return j, nil
}
