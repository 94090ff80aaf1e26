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

// A libpq key=value connection string is PostgreSQL's, never a file
// name; a path that only looks a little like one is a file.
func TestIsConnString(t *testing.T) {
	t.Parallel()
	for db, want := range map[string]bool{
		"postgres://u@h/db":                     true,
		"postgresql://u@h/db":                   true,
		"host=db.example dbname=aepforms":       true,
		"dbname=aepforms":                       true,
		"user=ui password=hunter2 host=/run/pg": true,
		"host = db.example":                     true,
		"  sslmode=require host=h":              true,
		"/var/lib/aepforms/aepforms.db":         false,
		"aepforms.db":                           false,
		"./host=weird.db":                       false,
		"/tmp/a=b.db":                           false,
		"":                                      false,
		"file:aepforms.db?_pragma=busy_timeout(100)": false,
	} {
		assert.Equal(t, want, IsConnString(db), "%q", db)
	}
}

// A key=value connection string's passwords are hidden like a URL's;
// one that does not read shows nothing of itself.
func TestRedactHidesAKeyValuePassword(t *testing.T) {
	t.Parallel()
	for in, want := range map[string]string{
		"host=db.example user=ui password=s3cret dbname=aepforms": "host=db.example user=ui password=xxxxx dbname=aepforms",
		"host='db.example' password='s3 cr\\'et' sslmode=require": "host=db.example password=xxxxx sslmode=require",
		"host = db.example sslpassword = s3cret":                  "host=db.example sslpassword=xxxxx",
		"application_name='my ui' password=s3cret":                "application_name='my ui' password=xxxxx",
		"host=db.example password='s3cret":                        "(a PostgreSQL connection string that does not parse)",
		"password s3cret host=h":                                  "(a PostgreSQL connection string that does not parse)",
	} {
		got := Redact(in)
		assert.Equal(t, want, got, "%q", in)
		assert.NotContains(t, got, "s3cret")
	}
}
