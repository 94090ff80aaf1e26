package app

import (
	"context"
	"errors"
	"flag"
	"fmt"
	"log/slog"
	"time"

	"github.com/aepforms/aepforms/internal/inbox"
	"github.com/aepforms/aepforms/internal/routing"
	"github.com/aepforms/aepforms/internal/rules"
	"github.com/aepforms/aepforms/internal/store"
	"github.com/aepforms/aepforms/internal/store/postgres"
	"github.com/aepforms/aepforms/internal/store/sqlite"
	"github.com/aepforms/aepforms/internal/webpush"
	"github.com/aepforms/aepforms/web"
)

// journalStore is the answer journal as serve uses it, whichever
// backend --db chose: the inbox's write-ahead journal, History and the
// operators' sessions for web, retention, the identity its commands are
// sent from, and /readyz's check.
type journalStore interface {
	inbox.Journal
	web.History
	web.Sessions
	web.People
	web.Database
	store.Pruner
	inbox.Leases
	inbox.PeerJournal
	Identity() store.Identity
	Close() error
	webpush.Store
	web.PushDevices
	rules.Store
	web.RuleLooks
	routing.Journal
	// KeepLiveCards has retention keep the routing history and the
	// claims and assignments of the questions the inbox still shows.
	KeepLiveCards(live func(card string) bool)
}

var (
	_ journalStore = (*sqlite.Journal)(nil)
	_ journalStore = (*postgres.Journal)(nil)
)

// pruneInterval is how often the journal drops answers past
// --history-retention.
const pruneInterval = time.Hour

// isPostgresURL reports whether --db names a PostgreSQL database (a
// postgres:// URL or a key=value connection string) rather than a
// SQLite file: a connection string is never taken for a file name, so
// its password is never logged as one.
func isPostgresURL(db string) bool { return postgres.IsConnString(db) }

// openJournal opens the answer journal db (--db): a PostgreSQL database
// for a postgres:// URL, shared by replicas, else the embedded SQLite
// file. Its errors name the file or database (never a password), the
// way out, and the flag that chooses it.
func openJournal(ctx context.Context, db string, lease leaseConfig, logger *slog.Logger) (journalStore, error) {
	if db == "" {
		return nil, errors.New("no place for the answer journal: set --db, AEPFORMS_DB, XDG_STATE_HOME or HOME")
	}
	if isPostgresURL(db) {
		j, err := postgres.Open(ctx, db, postgres.Options{Replica: lease.replica, Lease: lease.lease, WriteTimeout: lease.writeTimeout})
		if err != nil {
			return nil, fmt.Errorf("%w (the journal's database is chosen with --db or AEPFORMS_DB)", err)
		}
		logger.Info("answer journal: PostgreSQL "+j.Name(), "source", j.Identity().Source, "replica", j.Replica())
		return j, nil
	}
	j, err := sqlite.Open(db, sqlite.Options{Replica: lease.replica, Lease: lease.lease})
	switch {
	case errors.Is(err, sqlite.ErrLocked):
		return nil, fmt.Errorf("%w. Stop that one, or give this one its own journal with --db FILE (env AEPFORMS_DB); replicas share a PostgreSQL database instead (--db postgres://…)", err)
	case err != nil:
		return nil, fmt.Errorf("%w (the journal's file is chosen with --db or AEPFORMS_DB)", err)
	}
	logger.Info("answer journal: "+j.Path(), "source", j.Identity().Source)
	return j, nil
}

// leaseConfig is --replica and --lease.
type leaseConfig struct {
	replica string
	lease   time.Duration
	// writeTimeout bounds a PostgreSQL journal's writes (0: its default).
	writeTimeout time.Duration
}

// flagSet reports whether name was given on the command line.
func flagSet(fs *flag.FlagSet, name string) bool {
	set := false
	fs.Visit(func(f *flag.Flag) { set = set || f.Name == name })
	return set
}
