package sqldb

import (
	"context"
	"database/sql"
	"encoding/json"
	"errors"
	"fmt"
	"time"

	"github.com/aepforms/aepforms/internal/store"
)

// RuleBook is the standing answers and each request they
// answered. Every replica reads them here, not from a copy of its own,
// so a rule paused or deleted on one stops on all at once.
type RuleBook struct{ *DB }

const ruleColumns = `id, name, match, answer, note, maker, created_at, expires_at, state, reason, state_at, card_id`

// CreateRule keeps a new rule, unless max (> 0) rules that may still
// answer are kept already: then it is refused with *store.RuleMaxError.
// The count and the insert are one transaction the database serialises
// with every other maker's (SQLite: BEGIN IMMEDIATE; PostgreSQL:
// Dialect.LockRules), so makers posting at once, on any replica, never
// overshoot max. Paused rules count (they can be resumed); expired ones
// do not (they never answer again), and past max the longest-expired are
// deleted to make room (kept for History, as a deleted rule is), so the
// rules listed stay at most max. It is bounded by the journal's write
// timeout (DB.Timeout) as the inbox's writes are.
func (r *RuleBook) CreateRule(ctx context.Context, rule store.Rule, max int) error {
	match, err := json.Marshal(rule.Match)
	if err != nil {
		return fmt.Errorf("journal: create rule: %w", err)
	}
	answer, err := json.Marshal(rule.Answer)
	if err != nil {
		return fmt.Errorf("journal: create rule: %w", err)
	}
	state := rule.State
	if state == "" {
		state = store.RuleActive
	}
	// Bounded: a maker holding the lock in a transaction that hangs (a
	// replica cut off mid-way) must not hold every other maker's post.
	ctx, cancel := r.bound(ctx)
	defer cancel()
	tx, err := r.Synced.BeginTx(ctx, nil)
	if err != nil {
		return fmt.Errorf("journal: create rule: %w", err)
	}
	defer func() { _ = tx.Rollback() }()
	if max > 0 && r.Dialect.LockRules != "" {
		if _, err := tx.ExecContext(ctx, r.Dialect.LockRules); err != nil {
			return fmt.Errorf("journal: create rule: %w", err)
		}
	}
	if _, err := tx.ExecContext(ctx, r.Q(`INSERT INTO rules (`+ruleColumns+`) VALUES (?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?)`),
		rule.ID, rule.Name, string(match), string(answer), rule.Note, rule.Maker,
		store.Nanos(rule.Created), store.Nanos(rule.Expires), state, rule.Reason, store.Nanos(rule.StateAt), rule.Card); err != nil {
		return fmt.Errorf("journal: create rule: %w", err)
	}
	if max > 0 {
		now := store.Nanos(rule.Created)
		var counted, listed int
		if err := tx.QueryRowContext(ctx, r.Q(`SELECT
			coalesce(sum(CASE WHEN expires_at > ? THEN 1 ELSE 0 END), 0), count(*)
			FROM rules WHERE state != ?`), now, store.RuleDeleted).Scan(&counted, &listed); err != nil {
			return fmt.Errorf("journal: create rule: %w", err)
		}
		if counted > max {
			return &store.RuleMaxError{Max: max}
		}
		if listed > max {
			if _, err := tx.ExecContext(ctx, r.Q(`UPDATE rules SET state = ?, reason = '', state_at = ?
				WHERE id IN (SELECT id FROM rules WHERE state != ? AND expires_at <= ? ORDER BY expires_at, id LIMIT ?)`),
				store.RuleDeleted, now, store.RuleDeleted, now, listed-max); err != nil {
				return fmt.Errorf("journal: create rule: %w", err)
			}
		}
	}
	if err := tx.Commit(); err != nil {
		return fmt.Errorf("journal: create rule: %w", err)
	}
	return nil
}

// RuleCount counts the rules that count toward the cap at now: active or
// paused, not expired (CreateRule's count, for a check before anything
// is sent).
func (r *RuleBook) RuleCount(ctx context.Context, now time.Time) (int, error) {
	var n int
	if err := r.Synced.QueryRowContext(ctx, r.Q(`SELECT count(*) FROM rules WHERE state != ? AND expires_at > ?`),
		store.RuleDeleted, store.Nanos(now)).Scan(&n); err != nil {
		return 0, fmt.Errorf("journal: rule count: %w", err)
	}
	return n, nil
}

// Rules lists the rules that are not deleted, newest first, each with
// its count of uses and its last use: the requests it answered, a claim
// counted only once its answer is journaled (a process killed between
// the two left the request to the operators: ClaimRuleUse).
func (r *RuleBook) Rules(ctx context.Context) ([]store.Rule, error) {
	const answered = `FROM rule_uses u WHERE u.rule_id = rules.id AND EXISTS (SELECT 1 FROM submissions s WHERE s.command_id = u.command_id)`
	rows, err := r.Synced.QueryContext(ctx, r.Q(`SELECT `+ruleColumns+`,
		(SELECT count(*) `+answered+`),
		(SELECT coalesce(max(u.at), 0) `+answered+`)
		FROM rules WHERE state != ? ORDER BY created_at DESC, id`), store.RuleDeleted)
	if err != nil {
		return nil, fmt.Errorf("journal: rules: %w", err)
	}
	defer rows.Close()
	var out []store.Rule
	for rows.Next() {
		var last int64
		rule, err := scanRule(rows, &rule0{uses: true}, &last)
		if err != nil {
			return nil, fmt.Errorf("journal: rules: %w", err)
		}
		out = append(out, rule)
	}
	if err := rows.Err(); err != nil {
		return nil, fmt.Errorf("journal: rules: %w", err)
	}
	changes, err := r.ruleChanges(ctx, `EXISTS (SELECT 1 FROM rules WHERE rules.id = c.rule_id AND rules.state != ?)`, store.RuleDeleted)
	if err != nil {
		return nil, err
	}
	for i := range out {
		out[i].Changes = changes[out[i].ID]
	}
	return out, nil
}

// ActiveRules lists the rules that may answer at now (active, not
// expired), oldest first, without their uses: what the Runner reads for
// every new request.
func (r *RuleBook) ActiveRules(ctx context.Context, now time.Time) ([]store.Rule, error) {
	rows, err := r.Synced.QueryContext(ctx, r.Q(`SELECT `+ruleColumns+` FROM rules WHERE state = ? AND expires_at > ? ORDER BY created_at, id`),
		store.RuleActive, store.Nanos(now))
	if err != nil {
		return nil, fmt.Errorf("journal: active rules: %w", err)
	}
	defer rows.Close()
	var out []store.Rule
	for rows.Next() {
		rule, err := scanRule(rows, &rule0{}, nil)
		if err != nil {
			return nil, fmt.Errorf("journal: active rules: %w", err)
		}
		out = append(out, rule)
	}
	return out, rows.Err()
}

// Rule returns the rule id, deleted ones too (History names the rule
// that answered after it is gone).
func (r *RuleBook) Rule(ctx context.Context, id string) (store.Rule, bool, error) {
	row := r.Synced.QueryRowContext(ctx, r.Q(`SELECT `+ruleColumns+` FROM rules WHERE id = ?`), id)
	rule, err := scanRule(row, &rule0{}, nil)
	if errors.Is(err, sql.ErrNoRows) {
		return store.Rule{}, false, nil
	}
	if err != nil {
		return store.Rule{}, false, fmt.Errorf("journal: rule: %w", err)
	}
	changes, err := r.ruleChanges(ctx, `c.rule_id = ?`, id)
	if err != nil {
		return store.Rule{}, false, err
	}
	rule.Changes = changes[id]
	return rule, true, nil
}

// RuleFromCard returns the newest rule made from card, deleted ones
// too (the card's page says a rule was made, and that it is gone).
func (r *RuleBook) RuleFromCard(ctx context.Context, card string) (store.Rule, bool, error) {
	if card == "" {
		return store.Rule{}, false, nil
	}
	row := r.Synced.QueryRowContext(ctx, r.Q(`SELECT `+ruleColumns+` FROM rules WHERE card_id = ? ORDER BY created_at DESC, id DESC LIMIT 1`), card)
	rule, err := scanRule(row, &rule0{}, nil)
	if errors.Is(err, sql.ErrNoRows) {
		return store.Rule{}, false, nil
	}
	if err != nil {
		return store.Rule{}, false, fmt.Errorf("journal: rule from card: %w", err)
	}
	return rule, true, nil
}

// RuleAnswered lists the requests rule id answered, newest first, at
// most n: the uses whose answer the journal holds (as Rules counts
// them), each with the question of its History entry.
func (r *RuleBook) RuleAnswered(ctx context.Context, id string, n int) ([]store.RuleUseRecord, error) {
	rows, err := r.Synced.QueryContext(ctx, r.Q(`SELECT u.rule_id, u.card_id, u.source, u.session, u.request_id, u.command_id, u.at, s.question
		FROM rule_uses u JOIN submissions s ON s.command_id = u.command_id
		WHERE u.rule_id = ? ORDER BY u.at DESC, u.command_id DESC LIMIT ?`), id, n)
	if err != nil {
		return nil, fmt.Errorf("journal: rule answered: %w", err)
	}
	defer rows.Close()
	var out []store.RuleUseRecord
	for rows.Next() {
		var u store.RuleUseRecord
		var at int64
		if err := rows.Scan(&u.Rule, &u.Card, &u.Source, &u.Session, &u.RequestID, &u.CommandID, &at, &u.Question); err != nil {
			return nil, fmt.Errorf("journal: rule answered: %w", err)
		}
		u.At = store.FromNanos(at)
		out = append(out, u)
	}
	return out, rows.Err()
}

// SetRuleState pauses (store.RulePaused, with the reason why), resumes
// (store.RuleActive) or deletes (store.RuleDeleted) rule id as operator
// by ("" for aepforms itself), and reports whether it changed one; a
// deleted rule stays deleted. A change is kept with who and when
// (store.RuleChange), in the same transaction.
func (r *RuleBook) SetRuleState(ctx context.Context, id, state, reason, by string, at time.Time) (bool, error) {
	change, ok := map[string]string{store.RuleActive: store.RuleChangeResumed, store.RulePaused: store.RuleChangePaused,
		store.RuleDeleted: store.RuleChangeDeleted}[state]
	if !ok {
		return false, fmt.Errorf("journal: rule state %q", state)
	}
	if state == store.RuleActive {
		reason = ""
	}
	tx, err := r.Synced.BeginTx(ctx, nil)
	if err != nil {
		return false, fmt.Errorf("journal: rule state: %w", err)
	}
	defer func() { _ = tx.Rollback() }()
	res, err := tx.ExecContext(ctx, r.Q(`UPDATE rules SET state = ?, reason = ?, state_at = ? WHERE id = ? AND state != ? AND state != ?`),
		state, reason, store.Nanos(at), id, store.RuleDeleted, state)
	if err != nil {
		return false, fmt.Errorf("journal: rule state: %w", err)
	}
	n, err := res.RowsAffected()
	if err != nil || n == 0 {
		return false, err
	}
	if _, err := tx.ExecContext(ctx, r.Q(`INSERT INTO rule_changes (rule_id, change, operator, reason, at) VALUES (?, ?, ?, ?, ?)`),
		id, change, by, reason, store.Nanos(at)); err != nil {
		return false, fmt.Errorf("journal: rule change: %w", err)
	}
	if err := tx.Commit(); err != nil {
		return false, fmt.Errorf("journal: rule state: %w", err)
	}
	return true, nil
}

// CarryRule lets rule id answer the connection instance too
// (store.RuleMatch.Carried), as operator by, and reports whether it
// changed the rule: not when it is deleted, names no connection of its
// own, or answers instance already. The change is kept with who and when
// (store.RuleChangeCarried, Reason the instance), in the same
// transaction, which holds off every other maker's and carrier's
// (Dialect.LockRules) so two carrying at once both count.
func (r *RuleBook) CarryRule(ctx context.Context, id, instance, by string, at time.Time) (bool, error) {
	if instance == "" {
		return false, nil
	}
	ctx, cancel := r.bound(ctx)
	defer cancel()
	tx, err := r.Synced.BeginTx(ctx, nil)
	if err != nil {
		return false, fmt.Errorf("journal: carry rule: %w", err)
	}
	defer func() { _ = tx.Rollback() }()
	if r.Dialect.LockRules != "" {
		if _, err := tx.ExecContext(ctx, r.Dialect.LockRules); err != nil {
			return false, fmt.Errorf("journal: carry rule: %w", err)
		}
	}
	var raw string
	err = tx.QueryRowContext(ctx, r.Q(`SELECT match FROM rules WHERE id = ? AND state != ?`), id, store.RuleDeleted).Scan(&raw)
	if errors.Is(err, sql.ErrNoRows) {
		return false, nil
	}
	if err != nil {
		return false, fmt.Errorf("journal: carry rule: %w", err)
	}
	var m store.RuleMatch
	if err := json.Unmarshal([]byte(raw), &m); err != nil {
		return false, fmt.Errorf("journal: carry rule: %w", err)
	}
	if m.Instance == "" || m.Answers(instance) {
		return false, nil
	}
	m.Carried = append(m.Carried, instance)
	if n := len(m.Carried); n > store.MaxCarried {
		m.Carried = append([]string(nil), m.Carried[n-store.MaxCarried:]...)
	}
	b, err := json.Marshal(m)
	if err != nil {
		return false, fmt.Errorf("journal: carry rule: %w", err)
	}
	if _, err := tx.ExecContext(ctx, r.Q(`UPDATE rules SET match = ? WHERE id = ?`), string(b), id); err != nil {
		return false, fmt.Errorf("journal: carry rule: %w", err)
	}
	if _, err := tx.ExecContext(ctx, r.Q(`INSERT INTO rule_changes (rule_id, change, operator, reason, at) VALUES (?, ?, ?, ?, ?)`),
		id, store.RuleChangeCarried, by, instance, store.Nanos(at)); err != nil {
		return false, fmt.Errorf("journal: rule change: %w", err)
	}
	if err := tx.Commit(); err != nil {
		return false, fmt.Errorf("journal: carry rule: %w", err)
	}
	return true, nil
}

// DeleteRule deletes rule id as operator by: it is never listed or
// applied again.
func (r *RuleBook) DeleteRule(ctx context.Context, id, by string, at time.Time) (bool, error) {
	return r.SetRuleState(ctx, id, store.RuleDeleted, "", by, at)
}

// ruleChanges reads the changes of the rules where (a condition on
// rule_changes c, with ? placeholders for args) selects, oldest first,
// by rule id.
func (r *RuleBook) ruleChanges(ctx context.Context, where string, args ...any) (map[string][]store.RuleChange, error) {
	rows, err := r.Synced.QueryContext(ctx, r.Q(`SELECT c.rule_id, c.change, c.operator, c.reason, c.at FROM rule_changes c
		WHERE `+where+` ORDER BY c.id`), args...)
	if err != nil {
		return nil, fmt.Errorf("journal: rule changes: %w", err)
	}
	defer rows.Close()
	out := map[string][]store.RuleChange{}
	for rows.Next() {
		var id string
		var c store.RuleChange
		var at int64
		if err := rows.Scan(&id, &c.Change, &c.By, &c.Reason, &at); err != nil {
			return nil, fmt.Errorf("journal: rule changes: %w", err)
		}
		c.At = store.FromNanos(at)
		out[id] = append(out[id], c)
	}
	return out, rows.Err()
}

// ClaimRuleUse keeps that rule u.Rule answers u's request, and reports
// whether it did: only while the rule is active and unexpired at now,
// and only once per request (another replica's claim, or an earlier one,
// wins). The rule answers only a request it claimed, so a rule paused or
// deleted before the claim answers nothing more.
func (r *RuleBook) ClaimRuleUse(ctx context.Context, u store.RuleUse, now time.Time) (bool, error) {
	res, err := r.Synced.ExecContext(ctx, r.Q(`INSERT INTO rule_uses (rule_id, card_id, source, session, request_id, command_id, at)
		SELECT ?, ?, ?, ?, ?, ?, ? WHERE EXISTS (SELECT 1 FROM rules WHERE id = ? AND state = ? AND expires_at > ?)
		ON CONFLICT (rule_id, source, session, request_id) DO NOTHING`),
		u.Rule, u.Card, u.Source, u.Session, u.RequestID, u.CommandID, store.Nanos(u.At), u.Rule, store.RuleActive, store.Nanos(now))
	if err != nil {
		return false, fmt.Errorf("journal: rule use: %w", err)
	}
	n, err := res.RowsAffected()
	if err != nil {
		return false, fmt.Errorf("journal: rule use: %w", err)
	}
	return n > 0, nil
}

// ReleaseRuleUse forgets the claim u (its command u.CommandID) when the
// rule's answer was not kept after all (the request was answered
// meanwhile): the rule's uses count what it sent.
func (r *RuleBook) ReleaseRuleUse(ctx context.Context, u store.RuleUse) error {
	if _, err := r.Synced.ExecContext(ctx, r.Q(`DELETE FROM rule_uses WHERE rule_id = ? AND source = ? AND session = ? AND request_id = ? AND command_id = ?`),
		u.Rule, u.Source, u.Session, u.RequestID, u.CommandID); err != nil {
		return fmt.Errorf("journal: rule use: %w", err)
	}
	return nil
}

// OrphanRuleUses lists the claims made before before whose answer the
// journal does not hold (no submission with the claim's command id),
// oldest first: a process that stopped between a rule's claim and its
// answer's record left them, and they are answers owed.
func (r *RuleBook) OrphanRuleUses(ctx context.Context, before time.Time) ([]store.RuleUse, error) {
	rows, err := r.Synced.QueryContext(ctx, r.Q(`SELECT rule_id, card_id, source, session, request_id, command_id, at FROM rule_uses u
		WHERE at < ? AND NOT EXISTS (SELECT 1 FROM submissions s WHERE s.command_id = u.command_id) ORDER BY at`), store.Nanos(before))
	if err != nil {
		return nil, fmt.Errorf("journal: orphan rule uses: %w", err)
	}
	defer rows.Close()
	var out []store.RuleUse
	for rows.Next() {
		var u store.RuleUse
		var at int64
		if err := rows.Scan(&u.Rule, &u.Card, &u.Source, &u.Session, &u.RequestID, &u.CommandID, &at); err != nil {
			return nil, fmt.Errorf("journal: orphan rule uses: %w", err)
		}
		u.At = store.FromNanos(at)
		out = append(out, u)
	}
	return out, rows.Err()
}

// RuleUses counts the requests rule id answered at or after since.
func (r *RuleBook) RuleUses(ctx context.Context, id string, since time.Time) (int, error) {
	var n int
	if err := r.Synced.QueryRowContext(ctx, r.Q(`SELECT count(*) FROM rule_uses WHERE rule_id = ? AND at >= ?`), id, store.Nanos(since)).Scan(&n); err != nil {
		return 0, fmt.Errorf("journal: rule uses: %w", err)
	}
	return n, nil
}

type rule0 struct{ uses bool }

func scanRule(row interface{ Scan(...any) error }, how *rule0, last *int64) (store.Rule, error) {
	var rule store.Rule
	var match, answer string
	var created, expires, at int64
	dest := []any{&rule.ID, &rule.Name, &match, &answer, &rule.Note, &rule.Maker, &created, &expires, &rule.State, &rule.Reason, &at, &rule.Card}
	if how.uses {
		dest = append(dest, &rule.Uses, last)
	}
	if err := row.Scan(dest...); err != nil {
		return store.Rule{}, err
	}
	if err := json.Unmarshal([]byte(match), &rule.Match); err != nil {
		return store.Rule{}, err
	}
	if err := json.Unmarshal([]byte(answer), &rule.Answer); err != nil {
		return store.Rule{}, err
	}
	rule.Created, rule.Expires = store.FromNanos(created), store.FromNanos(expires)
	if at != 0 {
		rule.StateAt = store.FromNanos(at)
	}
	if last != nil && *last != 0 {
		rule.LastUse = store.FromNanos(*last)
	}
	return rule, nil
}
