package sqldb

import (
	"testing"

	"github.com/stretchr/testify/assert"
)

// A query is written once with ? and numbered for PostgreSQL.
func TestQRebindsPlaceholdersForTheDialect(t *testing.T) {
	t.Parallel()
	const q = `UPDATE submissions SET state = ?, reason = ? WHERE command_id = ? AND (lease_owner = ? OR lease_until <= ?)`
	sqlite := &DB{Dialect: Dialect{Instr: "instr"}}
	pg := &DB{Dialect: Dialect{Numbered: true, Instr: "strpos"}}
	assert.Equal(t, q, sqlite.Q(q))
	assert.Equal(t, `UPDATE submissions SET state = $1, reason = $2 WHERE command_id = $3 AND (lease_owner = $4 OR lease_until <= $5)`, pg.Q(q))
	assert.Equal(t, `SELECT 1`, pg.Q(`SELECT 1`))
}
