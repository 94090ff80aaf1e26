package postgres

import (
	"testing"

	"github.com/stretchr/testify/assert"
)

// A password is never shown, wherever the URL carries it.
func TestRedactHidesEveryPassword(t *testing.T) {
	t.Parallel()
	for _, u := range []string{
		"postgres://alice:s3cret@db.example/aepforms",
		"postgres://alice@db.example/aepforms?password=s3cret&sslmode=require",
		"postgres://alice@db.example/aepforms?sslpassword=s3cret",
	} {
		got := Redact(u)
		assert.NotContains(t, got, "s3cret", u)
		assert.Contains(t, got, "db.example", "the rest stays readable")
	}
}
