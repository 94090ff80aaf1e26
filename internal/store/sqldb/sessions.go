package sqldb

import (
	"context"
	"database/sql"
	"errors"
	"fmt"
	"strings"
	"time"

	"github.com/aepforms/aepforms/internal/store"
)

// CreateSession keeps a new operator session.
func (x *Sessions) CreateSession(ctx context.Context, s store.Session) error {
	if _, err := x.Synced.ExecContext(ctx, x.Q(`INSERT INTO sessions (id_hash, operator, secret, user_agent, created_at, last_seen, subject, refresh, checked_at)
		VALUES (?, ?, ?, ?, ?, ?, ?, ?, ?)`),
		s.IDHash, s.Operator, s.Secret, s.UserAgent, store.Nanos(s.Created), store.Nanos(s.LastSeen), s.Subject, nonNil(s.Refresh), store.Nanos(s.Checked)); err != nil {
		return fmt.Errorf("journal: create session: %w", err)
	}
	return nil
}

// LookupSession reads the session whose id hashes to idHash; false when
// there is none.
func (x *Sessions) LookupSession(ctx context.Context, idHash string) (store.Session, bool, error) {
	s := store.Session{IDHash: idHash}
	var created, seen, checked int64
	err := x.Synced.QueryRowContext(ctx, x.Q(`SELECT operator, secret, user_agent, created_at, last_seen, subject, refresh, checked_at FROM sessions WHERE id_hash = ?`), idHash).
		Scan(&s.Operator, &s.Secret, &s.UserAgent, &created, &seen, &s.Subject, &s.Refresh, &checked)
	if errors.Is(err, sql.ErrNoRows) {
		return store.Session{}, false, nil
	}
	if err != nil {
		return store.Session{}, false, fmt.Errorf("journal: session: %w", err)
	}
	s.Created, s.LastSeen, s.Checked = store.FromNanos(created), store.FromNanos(seen), store.FromNanos(checked)
	if len(s.Refresh) == 0 {
		s.Refresh = nil
	}
	return s, true, nil
}

// nonNil is b, or an empty byte string for nil (the column is NOT NULL).
func nonNil(b []byte) []byte {
	if b == nil {
		return []byte{}
	}
	return b
}

// ClaimSessionCheck makes at the time session idHash's role and teams
// were last read from the identity provider, if that was still was:
// true for the one caller (of every replica's) whose claim took, which
// then asks the provider.
func (x *Sessions) ClaimSessionCheck(ctx context.Context, idHash string, was, at time.Time) (bool, error) {
	res, err := x.Synced.ExecContext(ctx, x.Q(`UPDATE sessions SET checked_at = ? WHERE id_hash = ? AND checked_at = ?`), store.Nanos(at), idHash, store.Nanos(was))
	if err != nil {
		return false, fmt.Errorf("journal: claim a session's check: %w", err)
	}
	n, err := res.RowsAffected()
	return n == 1, err
}

// SetSessionRefresh keeps session idHash's new sealed refresh token (a
// provider may issue a new one at each use).
func (x *Sessions) SetSessionRefresh(ctx context.Context, idHash string, sealed []byte) error {
	if _, err := x.Synced.ExecContext(ctx, x.Q(`UPDATE sessions SET refresh = ? WHERE id_hash = ?`), nonNil(sealed), idHash); err != nil {
		return fmt.Errorf("journal: a session's refresh token: %w", err)
	}
	return nil
}

// SeePerson keeps p as the identity provider's person p.Name is now:
// their role, teams and when seen. The name is the account's first
// seen under it (p.Subject): another account's is store.ErrNameTaken,
// and nothing changes. A p without a subject (a sign-in before subjects
// were kept) changes the person's role, teams and sight only.
func (x *Sessions) SeePerson(ctx context.Context, p store.Person) error {
	res, err := x.Synced.ExecContext(ctx, x.Q(`INSERT INTO people (name, subject, role, teams, last_seen) VALUES (?, ?, ?, ?, ?)
		ON CONFLICT (name) DO UPDATE SET role = excluded.role, teams = excluded.teams, last_seen = excluded.last_seen,
			subject = CASE WHEN people.subject = '' THEN excluded.subject ELSE people.subject END
		WHERE people.subject IN ('', excluded.subject) OR excluded.subject = ''`),
		p.Name, p.Subject, p.Role, strings.Join(p.Teams, ","), store.Nanos(p.LastSeen))
	if err != nil {
		return fmt.Errorf("journal: keep a person: %w", err)
	}
	if n, err := res.RowsAffected(); err != nil {
		return fmt.Errorf("journal: keep a person: %w", err)
	} else if n == 0 {
		return store.ErrNameTaken
	}
	return nil
}

// People lists the identity provider's people seen at since or later,
// by name.
func (x *Sessions) People(ctx context.Context, since time.Time) ([]store.Person, error) {
	rows, err := x.Synced.QueryContext(ctx, x.Q(`SELECT name, subject, role, teams, last_seen FROM people WHERE last_seen >= ? ORDER BY name`), store.Nanos(since))
	if err != nil {
		return nil, fmt.Errorf("journal: people: %w", err)
	}
	defer rows.Close()
	var out []store.Person
	for rows.Next() {
		var p store.Person
		var teams string
		var seen int64
		if err := rows.Scan(&p.Name, &p.Subject, &p.Role, &teams, &seen); err != nil {
			return nil, fmt.Errorf("journal: people: %w", err)
		}
		if teams != "" {
			p.Teams = strings.Split(teams, ",")
		}
		p.LastSeen = store.FromNanos(seen)
		out = append(out, p)
	}
	if err := rows.Err(); err != nil {
		return nil, fmt.Errorf("journal: people: %w", err)
	}
	return out, nil
}

// ForgetPeople forgets the people last seen before before, and returns
// how many.
func (x *Sessions) ForgetPeople(ctx context.Context, before time.Time) (int, error) {
	res, err := x.Synced.ExecContext(ctx, x.Q(`DELETE FROM people WHERE last_seen < ?`), store.Nanos(before))
	if err != nil {
		return 0, fmt.Errorf("journal: forget people: %w", err)
	}
	n, err := res.RowsAffected()
	return int(n), err
}

// lookupChunk bounds the ids one LookupSessions query names (SQLite's
// and PostgreSQL's limits on a statement's parameters are far above it).
const lookupChunk = 500

// LookupSessions reads the sessions whose ids hash to idHashes, in one
// query (one a lookupChunk): those there are, by id hash.
func (x *Sessions) LookupSessions(ctx context.Context, idHashes []string) (map[string]store.Session, error) {
	out := make(map[string]store.Session, len(idHashes))
	for len(idHashes) > 0 {
		n := min(len(idHashes), lookupChunk)
		if err := x.lookupSessions(ctx, idHashes[:n], out); err != nil {
			return nil, err
		}
		idHashes = idHashes[n:]
	}
	return out, nil
}

func (x *Sessions) lookupSessions(ctx context.Context, idHashes []string, out map[string]store.Session) error {
	args := make([]any, len(idHashes))
	for i, h := range idHashes {
		args[i] = h
	}
	marks := strings.TrimSuffix(strings.Repeat("?, ", len(idHashes)), ", ")
	rows, err := x.Synced.QueryContext(ctx, x.Q(`SELECT id_hash, operator, secret, user_agent, created_at, last_seen FROM sessions WHERE id_hash IN (`+marks+`)`), args...)
	if err != nil {
		return fmt.Errorf("journal: sessions: %w", err)
	}
	defer rows.Close()
	for rows.Next() {
		var s store.Session
		var created, seen int64
		if err := rows.Scan(&s.IDHash, &s.Operator, &s.Secret, &s.UserAgent, &created, &seen); err != nil {
			return fmt.Errorf("journal: sessions: %w", err)
		}
		s.Created, s.LastSeen = store.FromNanos(created), store.FromNanos(seen)
		out[s.IDHash] = s
	}
	if err := rows.Err(); err != nil {
		return fmt.Errorf("journal: sessions: %w", err)
	}
	return nil
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
