package conformance

import (
	"context"
	"net/http"
	"net/http/httptest"
	"slices"
	"strings"
	"testing"
	"time"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
)

func TestCheckNamesUnique(t *testing.T) {
	t.Parallel()
	for _, names := range [][]string{Checks(), ControlChecks()} {
		sorted := slices.Clone(names)
		slices.Sort(sorted)
		assert.Equal(t, len(sorted), len(slices.Compact(sorted)), "duplicate check names in %v", names)
	}
}

// An endpoint that is not a relay passes nothing: every check fails or,
// where the set-up rules it out, is skipped.
func TestRunAgainstNonRelayPassesNothing(t *testing.T) {
	t.Parallel()
	srv := httptest.NewServer(http.NotFoundHandler())
	defer srv.Close()
	ctx, cancel := context.WithTimeout(context.Background(), 20*time.Second)
	defer cancel()
	for _, tok := range []string{"", "secret"} {
		rep := Run(ctx, Target{BaseURL: srv.URL, Token: tok, Buffer: 64, Evict: true, MaxBody: 1024, MaxBatch: 10, MaxFrom: 2,
			Downlevel: []byte(`{"cases":[{"name":"n","ceiling":"none","event":{"type":"x.a.b.c"},"expect_capture":"none"}]}`), CheckTimeout: time.Second})
		assert.Len(t, rep.Results, len(Checks()))
		for _, r := range rep.Results {
			assert.NotEqual(t, Pass, r.Status, "token %q: check %s passed against a 404 server: %s", tok, r.Name, r.Reason)
			if r.Status == Fail {
				assert.NotEmpty(t, r.Reason, "a failure says why")
			}
		}
	}
	crep := RunControl(ctx, ControlTarget{BaseURL: srv.URL, Token: "secret", CheckTimeout: time.Second})
	require.Len(t, crep.Results, len(ControlChecks()))
	for _, r := range crep.Results {
		assert.Equal(t, Fail, r.Status, "control check %s against a 404 server", r.Name)
	}
}

// The discovery check holds the document to what the operator configured.
func TestDiscoveryValidate(t *testing.T) {
	t.Parallel()
	good := `{"aep":["0.1"],"endpoints":{"events":"/events","stream":"/stream","socket":"/socket"},
		"capabilities":{"filters":["attr-match"],"replay":{"buffer":64,"all":true},"capture":["none","metadata","redacted"],"control":{"accepts":[]},"roster":{}}}`
	cases := []struct {
		name, doc, want string
	}{
		{"conforming", good, ""},
		{"wrong buffer", replace(good, `"buffer":64`, `"buffer":10000`), "got 10000, want the configured 64"},
		{"no replay all", replace(good, `"all":true`, `"all":false`), "replay.all"},
		{"no roster", replace(good, `,"roster":{}`, ``), "capabilities.roster"},
		{"no socket", replace(good, `,"socket":"/socket"`, ``), "endpoints.socket"},
		{"other version", replace(good, `["0.1"]`, `["0.2"]`), `want it to list "0.1"`},
	}
	for _, c := range cases {
		t.Run(c.name, func(t *testing.T) {
			t.Parallel()
			srv := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, _ *http.Request) {
				w.Header().Set("Content-Type", "application/json")
				_, _ = w.Write([]byte(c.doc))
			}))
			defer srv.Close()
			ctx, cancel := context.WithTimeout(context.Background(), 5*time.Second)
			defer cancel()
			rep := Run(ctx, Target{BaseURL: srv.URL, Buffer: 64, Only: []string{"discovery.events"}})
			require.Len(t, rep.Results, 1)
			if c.want == "" {
				assert.Equal(t, Pass, rep.Results[0].Status, rep.Results[0].Reason)
				return
			}
			assert.Equal(t, Fail, rep.Results[0].Status)
			assert.Contains(t, rep.Results[0].Reason, c.want)
		})
	}
}

func replace(s, old, new string) string { return strings.ReplaceAll(s, old, new) }
