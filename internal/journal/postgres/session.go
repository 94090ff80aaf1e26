package postgres

import (
	"context"
	"errors"
	"fmt"
	"time"

	"github.com/jackc/pgx/v5"

	"github.com/aepforms/aepforms/internal/journal"
)

// CreateSession keeps a new operator session.
func (j *Journal) CreateSession(ctx context.Context, s journal.Session) error {
	if _, err := j.pool.Exec(ctx, `INSERT INTO sessions (id_hash, operator, secret, user_agent, created_at, last_seen) VALUES ($1, $2, $3, $4, $5, $6)`,
		s.IDHash, s.Operator, s.Secret, s.UserAgent, journal.Nanos(s.Created), journal.Nanos(s.LastSeen)); err != nil {
		return fmt.Errorf("journal: create session: %w", err)
	}
	return nil
}

// LookupSession reads the session whose id hashes to idHash; false when
// there is none. A session ended on one replica is gone for all.
func (j *Journal) LookupSession(ctx context.Context, idHash string) (journal.Session, bool, error) {
	s := journal.Session{IDHash: idHash}
	var created, seen int64
	err := j.pool.QueryRow(ctx, `SELECT operator, secret, user_agent, created_at, last_seen FROM sessions WHERE id_hash = $1`, idHash).
		Scan(&s.Operator, &s.Secret, &s.UserAgent, &created, &seen)
	if errors.Is(err, pgx.ErrNoRows) {
		return journal.Session{}, false, nil
	}
	if err != nil {
		return journal.Session{}, false, fmt.Errorf("journal: session: %w", err)
	}
	s.Created, s.LastSeen = journal.FromNanos(created), journal.FromNanos(seen)
	return s, true, nil
}

// TouchSession sets a session's last use to at.
func (j *Journal) TouchSession(ctx context.Context, idHash string, at time.Time) error {
	if _, err := j.pool.Exec(ctx, `UPDATE sessions SET last_seen = $1 WHERE id_hash = $2`, journal.Nanos(at), idHash); err != nil {
		return fmt.Errorf("journal: touch session: %w", err)
	}
	return nil
}

// DeleteSession ends one session (none is not an error).
func (j *Journal) DeleteSession(ctx context.Context, idHash string) error {
	if _, err := j.pool.Exec(ctx, `DELETE FROM sessions WHERE id_hash = $1`, idHash); err != nil {
		return fmt.Errorf("journal: delete session: %w", err)
	}
	return nil
}

// DeleteOtherSessions ends operator's sessions but keepHash, and returns
// how many it ended.
func (j *Journal) DeleteOtherSessions(ctx context.Context, operator, keepHash string) (int, error) {
	return j.deleteSessions(ctx, `DELETE FROM sessions WHERE operator = $1 AND id_hash <> $2`, operator, keepHash)
}

// DeleteExpiredSessions ends the sessions last used before idleBefore or
// created before createdBefore, and returns how many it ended.
func (j *Journal) DeleteExpiredSessions(ctx context.Context, idleBefore, createdBefore time.Time) (int, error) {
	return j.deleteSessions(ctx, `DELETE FROM sessions WHERE last_seen < $1 OR created_at < $2`, journal.Nanos(idleBefore), journal.Nanos(createdBefore))
}

func (j *Journal) deleteSessions(ctx context.Context, query string, args ...any) (int, error) {
	tag, err := j.pool.Exec(ctx, query, args...)
	if err != nil {
		return 0, fmt.Errorf("journal: delete sessions: %w", err)
	}
	return int(tag.RowsAffected()), nil
}
