package web

import (
	"os"
	"testing"

	"github.com/aepforms/aepforms/internal/store/postgres/pgtest"
)

// TestMain stops the throwaway PostgreSQL server BenchmarkAnswerPost
// starts (pgtest.Need), once the package's tests end.
func TestMain(m *testing.M) { os.Exit(pgtest.Main(m)) }
