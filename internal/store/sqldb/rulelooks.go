package sqldb

import (
	"context"
	"database/sql"
	"errors"
	"fmt"
	"time"

	"github.com/aepforms/aepforms/internal/store"
)

// RuleAnswers counts the answers rules sent after operator last looked
// (store.RuleLooks), at most store.RuleAnswersMax: the rows read stop
// there.
func (a *Answers) RuleAnswers(ctx context.Context, operator string) (int, error) {
	var seen int64
	err := a.Synced.QueryRowContext(ctx, a.Q(`SELECT seen_at FROM rule_looks WHERE operator = ?`), operator).Scan(&seen)
	if err != nil && !errors.Is(err, sql.ErrNoRows) {
		return 0, fmt.Errorf("journal: rule looks: %w", err)
	}
	var n int
	err = a.Synced.QueryRowContext(ctx, a.Q(`SELECT count(*) FROM (SELECT 1 FROM submissions
		WHERE posted_at > ? AND `+a.Dialect.Instr+`(operator, ?) = 1 LIMIT ?) AS ruled`),
		seen, store.RuleByPrefix, store.RuleAnswersMax).Scan(&n)
	if err != nil {
		return 0, fmt.Errorf("journal: rule answers: %w", err)
	}
	return n, nil
}

// SawRuleAnswers keeps upTo as when operator last looked at the answers
// rules sent, unless a later time is kept already (two devices looking
// at once keep the later).
func (a *Answers) SawRuleAnswers(ctx context.Context, operator string, upTo time.Time) error {
	_, err := a.Synced.ExecContext(ctx, a.Q(`INSERT INTO rule_looks (operator, seen_at) VALUES (?, ?)
		ON CONFLICT (operator) DO UPDATE SET seen_at = CASE WHEN excluded.seen_at > rule_looks.seen_at THEN excluded.seen_at ELSE rule_looks.seen_at END`),
		operator, store.Nanos(upTo))
	if err != nil {
		return fmt.Errorf("journal: rule looks: %w", err)
	}
	return nil
}
