package postgres

import (
	"context"
	"os"
	"sync"
	"testing"
	"time"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/aepforms/aepforms/internal/inbox"
	"github.com/aepforms/aepforms/internal/store"
	"github.com/aepforms/aepforms/internal/store/postgres/pgtest"
	"github.com/aepforms/aepforms/internal/store/storetest"
)

// One throwaway cluster for the package; each test has its database.
func TestMain(m *testing.M) { os.Exit(pgtest.Main(m)) }

// openURL opens the journal at dbURL and closes it when the test ends.
func openURL(t testing.TB, dbURL string, opts Options) *Journal {
	t.Helper()
	if opts.Host == "" {
		opts.Host = "testhost"
	}
	j, err := Open(context.Background(), dbURL, opts)
	require.NoError(t, err)
	t.Cleanup(func() { _ = j.Close() })
	return j
}

// The journal's behaviour, shared with every backend, on PostgreSQL.
func TestJournalSuite(t *testing.T) {
	t.Parallel()
	c := pgtest.Need(t)
	storetest.Run(t, func(t *testing.T) storetest.Store {
		db := c.NewDatabase(t)
		return storetest.Store{
			// One replica, restarted under its name (serve --replica),
			// unless a test asks for another (OpenAs).
			Open: func() storetest.Backend { return openURL(t, db, Options{Replica: "replica-1"}) },
			OpenAs: func(replica string, lease time.Duration) storetest.Backend {
				return openURL(t, db, Options{Replica: replica, Lease: lease})
			},
			Shared: true,
		}
	})
}

// Replicas starting together on an empty database: each migration is
// applied once, and all of them share one identity, the command source
// they all send from.
func TestReplicasStartingTogetherMigrateOnceAndShareOneIdentity(t *testing.T) {
	t.Parallel()
	db := pgtest.Need(t).NewDatabase(t)
	const replicas = 8
	var (
		wg   sync.WaitGroup
		ids  = make([]store.Identity, replicas)
		errs = make([]error, replicas)
		gate = make(chan struct{})
	)
	for i := range replicas {
		wg.Go(func() {
			<-gate
			j, err := Open(context.Background(), db, Options{Host: "replica-" + string(rune('a'+i))})
			errs[i] = err
			if err == nil {
				ids[i] = j.Identity()
				_ = j.Close()
			}
		})
	}
	close(gate)
	wg.Wait()
	for i := range replicas {
		require.NoError(t, errs[i], "replica %d", i)
		assert.Equal(t, ids[0], ids[i], "replica %d shares the identity", i)
	}
	assert.NotEmpty(t, ids[0].Source)

	j := openURL(t, db, Options{Host: "later"})
	assert.Equal(t, ids[0], j.Identity(), "a later replica, on another host, keeps it")
	var rows, maxV int
	require.NoError(t, j.pool.QueryRow(context.Background(), `SELECT count(*), max(version) FROM schema_migrations`).Scan(&rows, &maxV))
	assert.Equal(t, SchemaVersion, rows, "each step recorded once")
	assert.Equal(t, SchemaVersion, maxV)
}

// Two replicas posting for one request at the same moment: the database
// lets exactly one submission be live, however the race falls.
func TestOneLiveSubmissionAcrossRacingReplicas(t *testing.T) {
	t.Parallel()
	db := pgtest.Need(t).NewDatabase(t)
	a, b := openURL(t, db, Options{}), openURL(t, db, Options{})
	for round := range 20 {
		key := inbox.RequestKey{Source: "aep://h/agent", Session: "s1", RequestID: "r" + storetest.CmdID(round)}
		var errs [2]error
		var wg sync.WaitGroup
		gate := make(chan struct{})
		for i, j := range []*Journal{a, b} {
			wg.Go(func() {
				s := storetest.Submission(storetest.CmdID(round)+"-"+string(rune('a'+i)), storetest.T0)
				s.Key = key
				<-gate
				errs[i] = j.Record(s)
			})
		}
		close(gate)
		wg.Wait()
		ok := 0
		for _, err := range errs {
			if err == nil {
				ok++
			} else {
				assert.ErrorIs(t, err, store.ErrLive, "round %d", round)
			}
		}
		assert.Equal(t, 1, ok, "round %d: exactly one recorded", round)
	}
	got, err := a.Unsettled()
	require.NoError(t, err)
	assert.Len(t, got, 20)
}

// A database migrated by a newer aepforms is refused, not downgraded.
func TestANewerDatabaseIsRefused(t *testing.T) {
	t.Parallel()
	db := pgtest.Need(t).NewDatabase(t)
	j := openURL(t, db, Options{})
	_, err := j.pool.Exec(context.Background(), `INSERT INTO schema_migrations (version, applied_at) VALUES ($1, 0)`, SchemaVersion+1)
	require.NoError(t, err)
	_, err = Open(context.Background(), db, Options{})
	require.ErrorIs(t, err, ErrTooNew)
	assert.Contains(t, err.Error(), db)
}

// A database that cannot be reached is an error naming it, without its
// password; Ping reports a database gone.
func TestUnreachableDatabase(t *testing.T) {
	t.Parallel()
	c := pgtest.Need(t)
	ctx, cancel := context.WithTimeout(context.Background(), 30*time.Second)
	defer cancel()
	_, err := Open(ctx, "postgres://postgres:hunter2@127.0.0.1:1/none?sslmode=disable&connect_timeout=5", Options{})
	require.Error(t, err)
	assert.NotContains(t, err.Error(), "hunter2")
	assert.Contains(t, err.Error(), "127.0.0.1:1")

	_, err = Open(ctx, "postgres://u:hunter2@h:notaport/x", Options{})
	require.Error(t, err)
	assert.NotContains(t, err.Error(), "hunter2")

	j := openURL(t, c.NewDatabase(t), Options{})
	require.NoError(t, j.Ping(ctx))
	require.NoError(t, j.Close())
	assert.Error(t, j.Ping(ctx), "closed")
}

// A database that stops answering (here: a table locked by another
// session) fails a Record after WriteTimeout instead of holding the
// inbox, which calls Record under its lock, for ever; once it answers
// again, Record works.
func TestRecordIsBoundedWhenTheDatabaseHangs(t *testing.T) {
	t.Parallel()
	db := pgtest.Need(t).NewDatabase(t)
	j := openURL(t, db, Options{WriteTimeout: 200 * time.Millisecond})
	ctx := context.Background()
	other := openURL(t, db, Options{})
	tx, err := other.pool.Begin(ctx)
	require.NoError(t, err)
	_, err = tx.Exec(ctx, `LOCK TABLE submissions IN ACCESS EXCLUSIVE MODE`)
	require.NoError(t, err)

	err = j.Record(storetest.Submission("c1", storetest.T0))
	require.Error(t, err, "a Record that cannot get through returns")
	assert.ErrorIs(t, err, context.DeadlineExceeded)

	require.NoError(t, tx.Rollback(ctx))
	// The server ends the timed-out statement's transaction when the
	// cancel request the driver sends reaches it, or when it finds the
	// connection gone; never committed. Until then the same command id
	// waits for it: recorded through a journal with the default
	// WriteTimeout, it waits rather than times out on a loaded machine.
	require.NoError(t, other.Record(storetest.Submission("c1", storetest.T0)), "the timed-out Record left nothing behind")
	got, err := other.Unsettled()
	require.NoError(t, err)
	assert.Len(t, got, 1)
}

// A maker whose transaction holds the rules' lock and hangs (a replica
// cut off mid-way) does not hold every other maker's post: making a rule
// fails after WriteTimeout, and works once the lock is let go.
func TestCreateRuleIsBoundedWhenAnotherMakerHangs(t *testing.T) {
	t.Parallel()
	db := pgtest.Need(t).NewDatabase(t)
	j := openURL(t, db, Options{WriteTimeout: 200 * time.Millisecond})
	ctx := context.Background()
	other := openURL(t, db, Options{})
	tx, err := other.pool.Begin(ctx)
	require.NoError(t, err)
	_, err = tx.Exec(ctx, lockRules)
	require.NoError(t, err)

	rule := store.Rule{ID: "r1", Name: "Allow", Maker: "alice", Created: storetest.T0, Expires: storetest.T0.Add(time.Hour)}
	err = j.CreateRule(ctx, rule, 10)
	require.Error(t, err, "making a rule behind a hung maker returns")
	assert.ErrorIs(t, err, context.DeadlineExceeded)

	require.NoError(t, tx.Rollback(ctx))
	// The timed-out maker's statement holds the lock until the server
	// ends it (the driver's cancel request, or the connection found
	// gone): a maker with the default WriteTimeout waits for that rather
	// than times out on a loaded machine.
	require.NoError(t, other.CreateRule(ctx, rule, 10), "the lock let go, the rule is made")
	got, err := other.Rules(ctx)
	require.NoError(t, err)
	assert.Len(t, got, 1)
}

// A state change the database cannot take (here: its table locked past
// WriteTimeout, as when the server is down) is kept: Ping, /readyz's
// check, says the database does not answer, in the operator's words,
// until the change is written; then it is, and Ping is nil.
func TestASettleTheDatabaseRefusedIsWrittenWhenItIsBack(t *testing.T) {
	t.Parallel()
	db := pgtest.Need(t).NewDatabase(t)
	j := openURL(t, db, Options{WriteTimeout: 200 * time.Millisecond})
	ctx := context.Background()
	require.NoError(t, j.Record(storetest.Submission("c1", storetest.T0)))
	other := openURL(t, db, Options{})
	tx, err := other.pool.Begin(ctx)
	require.NoError(t, err)
	_, err = tx.Exec(ctx, `LOCK TABLE submissions IN ACCESS EXCLUSIVE MODE`)
	require.NoError(t, err)

	err = j.Settle("c1", inbox.SubmissionAccepted, "", "", storetest.T0.Add(time.Second))
	var f *store.Fault
	require.ErrorAs(t, err, &f)
	assert.Equal(t, store.FaultUnavailable, f.Kind)
	pctx, cancel := context.WithTimeout(ctx, 300*time.Millisecond)
	err = j.Ping(pctx)
	cancel()
	require.Error(t, err, "not ready while the change waits")
	assert.Equal(t, "The answer journal's database does not answer: new answers cannot be kept until it is back.", store.Explain(err))
	assert.NotContains(t, store.Explain(err), db, "no URL on the page")

	require.NoError(t, tx.Rollback(ctx))
	require.NoError(t, j.Ping(ctx), "ready once the database takes writes")
	s, ok, err := j.Lookup("c1")
	require.NoError(t, err)
	require.True(t, ok)
	assert.Equal(t, inbox.SubmissionAccepted, s.State, "the refused change was written")
}
