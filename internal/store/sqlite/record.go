package sqlite

import (
	"context"
	"errors"

	"modernc.org/sqlite"
	sqlite3 "modernc.org/sqlite/lib"

	"github.com/aepforms/aepforms/internal/inbox"
	"github.com/aepforms/aepforms/internal/store"
	"github.com/aepforms/aepforms/internal/store/sqldb"
)

var (
	_ inbox.Journal     = (*Journal)(nil)
	_ inbox.MarkJournal = (*Journal)(nil)
)

// ErrDuplicate is Record's refusal of a command id already recorded
// (store.ErrDuplicate, the same for every backend).
var ErrDuplicate = store.ErrDuplicate

// Record keeps s (State sending, at s.At) and its first state change,
// committed (fsynced) before it returns.
//
// Records that arrive while another commit is in progress are committed
// together in the next transaction, with one sync for all of them (a
// group commit): the inbox calls Record outside its lock, so several
// operators' posts can be waiting at once, and each then waits for at
// most the commit in progress and its own, not for a queue of syncs.
// A duplicate command id fails only its own Record (ErrDuplicate).
func (j *Journal) Record(s inbox.Submission) error {
	row, err := newRecordRow(s)
	if err != nil {
		return err
	}
	j.recordMu.Lock()
	j.recordQueue = append(j.recordQueue, row)
	j.recordMu.Unlock()

	j.writeMu.Lock()
	j.recordMu.Lock()
	batch := j.recordQueue
	j.recordQueue = nil
	j.recordMu.Unlock()
	if len(batch) > 0 { // otherwise an earlier holder committed ours
		j.commitRecords(batch)
	}
	j.writeMu.Unlock()
	j.wrote()
	return j.health.Wrote("record", <-row.done)
}

// recordRow is one Record waiting to be committed: its values, encoded,
// and where its result goes.
type recordRow struct {
	*sqldb.Pending
	done chan error // buffered: one result
}

func newRecordRow(s inbox.Submission) (*recordRow, error) {
	p, err := sqldb.NewPending(s)
	if err != nil {
		return nil, err
	}
	return &recordRow{Pending: p, done: make(chan error, 1)}, nil
}

// commitRecords commits batch in one transaction and tells each row its
// result. If that transaction fails, each row is tried in a transaction
// of its own, so one bad row cannot refuse the others' posts. The caller
// holds writeMu.
func (j *Journal) commitRecords(batch []*recordRow) {
	results, err := j.insertRecords(batch)
	if err == nil {
		for i, row := range batch {
			row.done <- results[i]
		}
		return
	}
	if len(batch) == 1 {
		batch[0].done <- err
		return
	}
	for _, row := range batch {
		res, err := j.insertRecords([]*recordRow{row})
		if err == nil {
			err = res[0]
		}
		row.done <- err
	}
}

// insertRecords inserts rows in one transaction (sqldb.Answers.Insert:
// a statement refused by a unique index is undone alone, the
// transaction goes on). It returns each row's own result once committed,
// or the error that rolled the transaction back.
func (j *Journal) insertRecords(rows []*recordRow) ([]error, error) {
	ctx := context.Background()
	tx, err := j.db.BeginTx(ctx, nil)
	if err != nil {
		return nil, err
	}
	defer func() { _ = tx.Rollback() }()
	pending := make([]*sqldb.Pending, len(rows))
	for i, row := range rows {
		pending[i] = row.Pending
	}
	results, err := j.Answers.Insert(ctx, tx, pending)
	if err != nil {
		return nil, err
	}
	if err := tx.Commit(); err != nil {
		return nil, err
	}
	return results, nil
}

// isUnique reports a unique index's refusal: on submissions, with the
// command id's conflict taken by ON CONFLICT, only submissions_live's.
func isUnique(err error) bool {
	var se *sqlite.Error
	return errors.As(err, &se) && se.Code() == sqlite3.SQLITE_CONSTRAINT_UNIQUE
}
