package sqldb

import (
	"context"
	"database/sql"
	"errors"
	"fmt"
	"time"

	"github.com/aepforms/aepforms/internal/store"
)

// CreateSession keeps a new operator session.
func (x *Sessions) CreateSession(ctx context.Context, s store.Session) error {
	if _, err := x.Synced.ExecContext(ctx, x.Q(`INSERT INTO sessions (id_hash, operator, secret, user_agent, created_at, last_seen) VALUES (?, ?, ?, ?, ?, ?)`),
		s.IDHash, s.Operator, s.Secret, s.UserAgent, store.Nanos(s.Created), store.Nanos(s.LastSeen)); err != nil {
		return fmt.Errorf("journal: create session: %w", err)
	}
	return nil
}

// LookupSession reads the session whose id hashes to idHash; false when
// there is none.
func (x *Sessions) LookupSession(ctx context.Context, idHash string) (store.Session, bool, error) {
	s := store.Session{IDHash: idHash}
	var created, seen int64
	err := x.Synced.QueryRowContext(ctx, x.Q(`SELECT operator, secret, user_agent, created_at, last_seen FROM sessions WHERE id_hash = ?`), idHash).
		Scan(&s.Operator, &s.Secret, &s.UserAgent, &created, &seen)
	if errors.Is(err, sql.ErrNoRows) {
		return store.Session{}, false, nil
	}
	if err != nil {
		return store.Session{}, false, fmt.Errorf("journal: session: %w", err)
	}
	s.Created, s.LastSeen = store.FromNanos(created), store.FromNanos(seen)
	return s, true, nil
}

// TouchSession sets a session's last use to at.
func (x *Sessions) TouchSession(ctx context.Context, idHash string, at time.Time) error {
	if _, err := x.Synced.ExecContext(ctx, x.Q(`UPDATE sessions SET last_seen = ? WHERE id_hash = ?`), store.Nanos(at), idHash); err != nil {
		return fmt.Errorf("journal: touch session: %w", err)
	}
	return nil
}

// DeleteSession ends one session (none is not an error).
func (x *Sessions) DeleteSession(ctx context.Context, idHash string) error {
	if _, err := x.Synced.ExecContext(ctx, x.Q(`DELETE FROM sessions WHERE id_hash = ?`), idHash); err != nil {
		return fmt.Errorf("journal: delete session: %w", err)
	}
	return nil
}

// TakeSession ends one session and reports whether this call ended it:
// false when it was gone, or another call (on this replica or another)
// ended it first. Of calls racing for one session, one is told true.
func (x *Sessions) TakeSession(ctx context.Context, idHash string) (bool, error) {
	n, err := x.deleteSessions(ctx, `DELETE FROM sessions WHERE id_hash = ?`, idHash)
	if err != nil {
		return false, fmt.Errorf("journal: take session: %w", err)
	}
	return n == 1, nil
}

// DeleteOtherSessions ends operator's sessions but keepHash, and returns
// how many it ended.
func (x *Sessions) DeleteOtherSessions(ctx context.Context, operator, keepHash string) (int, error) {
	return x.deleteSessions(ctx, `DELETE FROM sessions WHERE operator = ? AND id_hash <> ?`, operator, keepHash)
}

// DeleteExpiredSessions ends the sessions last used before idleBefore or
// created before createdBefore, and returns how many it ended.
func (x *Sessions) DeleteExpiredSessions(ctx context.Context, idleBefore, createdBefore time.Time) (int, error) {
	return x.deleteSessions(ctx, `DELETE FROM sessions WHERE last_seen < ? OR created_at < ?`, store.Nanos(idleBefore), store.Nanos(createdBefore))
}

func (x *Sessions) deleteSessions(ctx context.Context, query string, args ...any) (int, error) {
	res, err := x.Synced.ExecContext(ctx, x.Q(query), args...)
	if err != nil {
		return 0, fmt.Errorf("journal: delete sessions: %w", err)
	}
	n, err := res.RowsAffected()
	return int(n), err
}

// Sessions are the operators' sign-ins, kept by the SHA-256 of their
// cookie's id, so every replica on one database knows them.
type Sessions struct{ *DB }
