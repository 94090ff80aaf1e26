package conformance

import (
	"net/http"
	"time"
)

// Target describes the relay a Run checks and how its operator configured
// it. Limits left zero are not probed (their checks are skipped, saying so).
type Target struct {
	// BaseURL is the endpoint's base, e.g. http://127.0.0.1:8787.
	BaseURL string
	// Token is the bearer token the endpoint requires. Empty means the
	// endpoint is expected to run open and watch-only: everything observable
	// and emittable without a token, every command refused unauthorized.
	Token string
	// Buffer is the configured replay depth per session, in events; the
	// discovery document must advertise exactly this. Required.
	Buffer int
	// Evict enables the eviction checks: sessions are flooded past Buffer,
	// so Buffer should be small (64 or so) for a fast run.
	Evict bool
	// MaxBody is the configured largest POST body, in bytes (413
	// payload-too-large beyond it). 0 skips the check.
	MaxBody int64
	// MaxBatch is the configured most events in one NDJSON batch (413
	// too-many-events beyond it). 0 skips the check.
	MaxBatch int
	// MaxFrom is the configured most resume positions in one from (400 on
	// SSE, limit-exceeded on WS beyond it). 0 skips the checks.
	MaxFrom int
	// SSEPing is the configured interval of the `: ping` comment on /stream;
	// the checker waits up to twice it for one. 0 skips the check.
	SSEPing time.Duration
	// Downlevel is the fixture corpus fixtures/downlevel/cases.json; the
	// capture-ceiling checks compare delivered events with its
	// expectations. Nil skips them.
	Downlevel []byte
	// CheckTimeout bounds each check (default 5 s).
	CheckTimeout time.Duration
	// HTTPClient makes the HTTP requests; nil uses a client of its own.
	HTTPClient *http.Client
	// Only, when set, runs just the checks with these names.
	Only []string
}

// authenticated reports whether the endpoint is expected to require a token.
func (t Target) authenticated() bool { return t.Token != "" }
