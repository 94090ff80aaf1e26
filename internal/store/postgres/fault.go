package postgres

import (
	"context"
	"errors"
	"net"
	"strings"

	"github.com/jackc/pgx/v5/pgconn"

	"github.com/aepforms/aepforms/internal/store"
)

// classify reads a PostgreSQL error as the operator can act on it: the
// server's disk full (SQLSTATE 53100), its other resources short or the
// server gone, shutting down or unreachable (classes 53, 08, 57P), a
// read-only server (25006), or a statement that timed out.
func classify(err error) store.FaultKind {
	var pe *pgconn.PgError
	if errors.As(err, &pe) {
		switch {
		case pe.Code == "53100":
			return store.FaultFull
		case pe.Code == "25006":
			return store.FaultReadOnly
		case strings.HasPrefix(pe.Code, "53"), strings.HasPrefix(pe.Code, "08"), strings.HasPrefix(pe.Code, "57P"):
			return store.FaultUnavailable
		}
		return store.FaultOther
	}
	var ce *pgconn.ConnectError
	var ne net.Error
	switch {
	case errors.As(err, &ce), errors.As(err, &ne),
		errors.Is(err, context.DeadlineExceeded), pgconn.Timeout(err):
		return store.FaultUnavailable
	}
	return store.FaultOther
}

// probe is the small write Ping makes while a write has met a storage
// fault, to see whether the database takes writes again.
func (j *Journal) probe(ctx context.Context) error {
	_, err := j.pool.Exec(ctx, `UPDATE identity SET host = host WHERE id = 1`)
	return err
}
