package app

import (
	"flag"
	"fmt"
	"time"
)

// journalConfig is the answer journal: where it is, how long it keeps an
// answer, what is sent again after a restart, and a replica's leases.
type journalConfig struct {
	db           string        // the answer journal's file or PostgreSQL database
	dbEnv        string        // AEPFORMS_DB, taken after parsing when it is a PostgreSQL URL
	retentionArg string        // --history-retention as given
	retention    time.Duration // how long the journal keeps an answer; 0 = for ever
	// resendMaxAge is the oldest a journaled answer may be to be sent
	// again after a restart; 0 sends none again.
	resendMaxAge time.Duration
	// replica names this process's resend leases on a shared journal
	// (--replica; default random); lease is how long one lasts unrenewed
	// (--lease): a replica that dies holding one has its answers sent
	// again by another once it lapses.
	replica        string
	lease          time.Duration
	dbWriteTimeout time.Duration // --db-write-timeout
	// settledKept is how many of this UI's settled answers the inbox
	// shows again after a restart, from the journal; older ones are in
	// the history.
	settledKept int
	// undoWindow is how long an operator's sent answer waits before its
	// command leaves, while the page offers Undo; 0 sends at once.
	undoWindow time.Duration
}

func (c *journalConfig) register(fs *flag.FlagSet, e envDefaults) {
	// A PostgreSQL URL in AEPFORMS_DB may carry a password: it is taken
	// after parsing, like the other secrets, so -h never prints it.
	c.dbEnv = e.env("AEPFORMS_DB")
	dbDefault := e.str("AEPFORMS_DB", defaultDBFile(e.env))
	if isPostgresURL(c.dbEnv) {
		dbDefault = defaultDBFile(e.env)
	}
	fs.StringVar(&c.db, "db", dbDefault, "the answer journal: a SQLite file only you can read, one serve at a time per file; or postgres://user@host/db (or host=… dbname=…), a PostgreSQL database several replicas share (env AEPFORMS_DB)")
	fs.StringVar(&c.retentionArg, "history-retention", e.str("AEPFORMS_HISTORY_RETENTION", "90d"), "how long the journal keeps an answer, in days like 90d or a duration like 720h; 0 keeps every answer (env AEPFORMS_HISTORY_RETENTION)")
	fs.DurationVar(&c.resendMaxAge, "resend-max-age", e.dur("AEPFORMS_RESEND_MAX_AGE", 10*time.Minute), "after a restart, send again a journaled answer the agent had not settled, if its question is still open and it is younger than this; 0 sends none again. Also the oldest an answer queued while the relay is away may be when it comes back (0: no limit) (env AEPFORMS_RESEND_MAX_AGE)")
	fs.StringVar(&c.replica, "replica", e.str("AEPFORMS_REPLICA", ""), "this replica's name on a shared PostgreSQL journal, under which it holds its answers' resend leases; a replica restarted under the same name resends its own at once, another waits for --lease. Default: random (a SQLite journal: the journal's own) (env AEPFORMS_REPLICA)")
	fs.DurationVar(&c.lease, "lease", e.dur("AEPFORMS_LEASE", 30*time.Second), "how long a replica holds the resend lease of an answer waiting for the agent without renewing it (it renews every third of it); once lapsed, another replica sends the answer again (env AEPFORMS_LEASE)")
	fs.DurationVar(&c.dbWriteTimeout, "db-write-timeout", e.dur("AEPFORMS_DB_WRITE_TIMEOUT", 10*time.Second), "a PostgreSQL journal's bound on each write (an answer's record, its states, making a rule): a database that stops answering fails that write, and the page says so, instead of holding the page (an answer whose record failed is not sent) (env AEPFORMS_DB_WRITE_TIMEOUT)")
	fs.DurationVar(&c.undoWindow, "undo-window", e.dur("AEPFORMS_UNDO_WINDOW", 5*time.Second), "how long an operator's answer (one, a batch, a notification's) waits, journaled, before its command leaves, while the page offers Undo; a crash meanwhile sends it after the restart. Rules never wait. 0 sends at once (env AEPFORMS_UNDO_WINDOW)")
	fs.IntVar(&c.settledKept, "settled-kept", e.integer("AEPFORMS_SETTLED_KEPT", 20), "after a restart, the inbox shows this many of the latest answers sent from this UI and recorded by their agent again, settled; older ones are in History; 0 shows none (env AEPFORMS_SETTLED_KEPT)")
}

func (c *journalConfig) check(fs *flag.FlagSet, _ envDefaults) error {
	if err := positive("--db-write-timeout", c.dbWriteTimeout); err != nil {
		return err
	}
	if err := positive("--lease", c.lease); err != nil {
		return err
	}
	if isPostgresURL(c.dbEnv) && !flagSet(fs, "db") {
		c.db = c.dbEnv
	}
	if err := notNegative("--resend-max-age", c.resendMaxAge); err != nil {
		return err
	}
	if err := notNegative("--undo-window", c.undoWindow); err != nil {
		return err
	}
	if c.settledKept < 0 {
		return fmt.Errorf("%w: --settled-kept must be 0 or more", ErrUsage)
	}
	var err error
	if c.retention, err = parseRetention(c.retentionArg); err != nil {
		return fmt.Errorf("%w: --history-retention %q: %v", ErrUsage, c.retentionArg, err)
	}
	return nil
}
