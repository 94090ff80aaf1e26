package app

import (
	"os"
	"testing"

	"github.com/aepforms/aepforms/internal/store/postgres/pgtest"
)

// A throwaway PostgreSQL cluster, started by the first test that needs
// one, serves the package's tests and is removed after them.
func TestMain(m *testing.M) { os.Exit(pgtest.Main(m)) }
