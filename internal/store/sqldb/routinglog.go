package sqldb

import (
	"context"
	"fmt"
	"strings"

	"github.com/aepforms/aepforms/internal/store"
)

// KeepRoutingStep keeps step s of its card's routing history and reports
// whether this call kept it: false when it was kept already (by this
// process or by another replica sharing the database), so one caller of
// all sends each step.
func (a *Answers) KeepRoutingStep(ctx context.Context, s store.RoutingStep) (bool, error) {
	defer a.lockWrites()()
	res, err := a.Synced.ExecContext(ctx, a.Q(`INSERT INTO routing_steps (card_id, kind, team, at) VALUES (?, ?, ?, ?) ON CONFLICT DO NOTHING`),
		s.Card, s.Kind, s.Team, store.Nanos(s.At))
	if err != nil {
		return false, fmt.Errorf("journal: routing step: %w", err)
	}
	n, err := res.RowsAffected()
	return n == 1, err
}

// RoutingSteps lists card's routing history, oldest first.
func (a *Answers) RoutingSteps(ctx context.Context, card string) ([]store.RoutingStep, error) {
	return a.routingOf(ctx, []any{card})
}

// routingOf lists the routing history of cards (at least one), oldest
// first.
func (a *Answers) routingOf(ctx context.Context, cards []any) ([]store.RoutingStep, error) {
	rows, err := a.Synced.QueryContext(ctx, a.Q(`SELECT card_id, kind, team, at FROM routing_steps WHERE card_id IN (?`+
		strings.Repeat(", ?", len(cards)-1)+`) ORDER BY at, kind, team`), cards...)
	if err != nil {
		return nil, fmt.Errorf("journal: routing steps: %w", err)
	}
	defer rows.Close()
	var out []store.RoutingStep
	for rows.Next() {
		var s store.RoutingStep
		var at int64
		if err := rows.Scan(&s.Card, &s.Kind, &s.Team, &at); err != nil {
			return nil, fmt.Errorf("journal: routing steps: %w", err)
		}
		s.At = store.FromNanos(at)
		out = append(out, s)
	}
	if err := rows.Err(); err != nil {
		return nil, fmt.Errorf("journal: routing steps: %w", err)
	}
	return out, nil
}
