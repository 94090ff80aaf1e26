package store

import (
	"context"
	"time"
)

// Pruner removes the entries posted before a time.
type Pruner interface {
	Prune(ctx context.Context, before time.Time) (removed int64, err error)
}

// Retention configures RunRetention.
type Retention struct {
	// Keep is how long an entry is kept after it was posted; 0 keeps
	// every entry (RunRetention returns at once).
	Keep time.Duration
	// Every is how often to prune. Default 1h.
	Every time.Duration
	// Now is the clock. Default time.Now.
	Now func() time.Time
	// Pruned, when set, is told the outcome of every prune.
	Pruned func(removed int64, err error)
}

// RunRetention prunes p of what is older than r.Keep at once and then
// every r.Every, until ctx ends. A failed prune is reported and tried
// again next time.
func RunRetention(ctx context.Context, p Pruner, r Retention) error {
	if r.Keep <= 0 {
		return nil
	}
	if r.Every <= 0 {
		r.Every = time.Hour
	}
	if r.Now == nil {
		r.Now = time.Now
	}
	t := time.NewTicker(r.Every)
	defer t.Stop()
	for {
		n, err := p.Prune(ctx, r.Now().Add(-r.Keep))
		if r.Pruned != nil && ctx.Err() == nil {
			r.Pruned(n, err)
		}
		select {
		case <-ctx.Done():
			return nil
		case <-t.C:
		}
	}
}
