package routes

import (
	"context"
	"errors"
	"io"
	"log/slog"
	"os"
	"path/filepath"
	"testing"
	"time"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
)

// issueExample is the routes file the issue shows.
const issueExample = `{"teams": {"oncall": {"webhook": "https://chat.example/hooks/abc", "remind": "5m", "escalate": "15m", "escalate_to": "leads"},
           "leads":  {"webhook": "https://chat.example/hooks/def"}},
 "routes": [{"agent": "claude-code", "kind": "permission", "team": "oncall"},
            {"session_label": "release-*", "team": "leads"},
            {"team": "oncall"}]}`

func TestFirstMatchingRouteNamesTheTeam(t *testing.T) {
	t.Parallel()
	tb, err := Parse([]byte(issueExample))
	require.NoError(t, err)
	for _, c := range []struct {
		name  string
		q     Question
		team  string
		route int
	}{
		{"agent and kind", Question{Agent: "claude-code", Kind: "permission", Session: "release-7"}, "oncall", 0},
		{"session glob", Question{Agent: "claude-code", Kind: "form", Session: "release-7"}, "leads", 1},
		{"the catch-all", Question{Agent: "other", Kind: "input", Session: "deploy-1"}, "oncall", 2},
	} {
		t.Run(c.name, func(t *testing.T) {
			team, i, ok := tb.Match(c.q)
			require.True(t, ok)
			assert.Equal(t, c.team, team)
			assert.Equal(t, c.route, i)
		})
	}
	oncall, ok := tb.Team("oncall")
	require.True(t, ok)
	assert.Equal(t, Team{Name: "oncall", Webhook: "https://chat.example/hooks/abc", Remind: 5 * time.Minute, Escalate: 15 * time.Minute, EscalateTo: "leads"}, oncall)
	assert.Equal(t, []string{"leads", "oncall"}, tb.TeamNames())
}

func TestNoRouteMatchesWithoutACatchAll(t *testing.T) {
	t.Parallel()
	tb, err := Parse([]byte(`{"teams": {"ops": {}}, "routes": [{"kind": "permission", "team": "ops"}]}`))
	require.NoError(t, err)
	_, _, ok := tb.Match(Question{Kind: "form"})
	assert.False(t, ok)
	var none *Table
	_, _, ok = none.Match(Question{Kind: "form"})
	assert.False(t, ok, "no routes file routes nothing")
}

func TestInvalidRoutesFilesAreRefusedNamingTheProblem(t *testing.T) {
	t.Parallel()
	for _, c := range []struct{ name, file, says string }{
		{"empty", ``, "the file is empty"},
		{"not JSON", "{\n\"teams\": {,}}", "line 2: not JSON"},
		{"unknown key", `{"teams": {"a": {"hook": "x"}}, "routes": [{"team": "a"}]}`, `unknown key "hook"`},
		{"route to an unknown team", `{"teams": {"a": {}}, "routes": [{"team": "b"}]}`, `route 1: team "b" is not among the file's teams (a)`},
		{"escalate_to an unknown team", `{"teams": {"a": {"escalate": "1m", "escalate_to": "z"}}, "routes": [{"team": "a"}]}`, `escalate_to "z" is no team`},
		{"escalate without a team", `{"teams": {"a": {"escalate": "1m"}}, "routes": [{"team": "a"}]}`, "escalate_to names no team"},
		{"bad duration", `{"teams": {"a": {"remind": "5 minutes"}}, "routes": [{"team": "a"}]}`, `remind "5 minutes" is not a positive duration`},
		{"bad webhook", `{"teams": {"a": {"webhook": "chat.example/hook"}}, "routes": [{"team": "a"}]}`, "webhook is not an http: or https: URL"},
		{"bad glob", `{"teams": {"a": {}}, "routes": [{"agent": "[a-", "team": "a"}]}`, `agent "[a-" is not a glob`},
		{"no routes", `{"teams": {"a": {}}}`, "no routes"},
		{"bad team name", `{"teams": {"on call": {}}, "routes": [{"team": "on call"}]}`, "a team's name is"},
	} {
		t.Run(c.name, func(t *testing.T) {
			t.Parallel()
			_, err := Parse([]byte(c.file))
			require.ErrorIs(t, err, ErrInvalid)
			assert.Contains(t, err.Error(), c.says)
		})
	}
}

func quiet() *slog.Logger { return slog.New(slog.NewTextHandler(io.Discard, nil)) }

func TestFileReloadsAndKeepsTheLastGoodOne(t *testing.T) {
	t.Parallel()
	p := filepath.Join(t.TempDir(), "routes.json")
	require.NoError(t, os.WriteFile(p, []byte(`{"teams": {"a": {}}, "routes": [{"team": "a"}]}`), 0o600))
	f, err := Load(p, quiet())
	require.NoError(t, err)
	team, _, _ := f.Table().Match(Question{})
	require.Equal(t, "a", team)

	ctx, cancel := context.WithCancel(context.Background())
	t.Cleanup(cancel)
	go f.Watch(ctx, 5*time.Millisecond)

	// A broken change is refused, named, and the last good table stays.
	changed := f.Changed()
	require.NoError(t, os.WriteFile(p, []byte(`{"teams": {"a": {}}, "routes": [{"team": "nobody"}]}`), 0o600))
	waitClosed(t, changed)
	require.Error(t, f.Problem())
	assert.Contains(t, f.Problem().Error(), `team "nobody"`)
	team, _, _ = f.Table().Match(Question{})
	assert.Equal(t, "a", team, "the last good routes stay in force")

	// A good change takes over and clears the problem.
	changed = f.Changed()
	require.NoError(t, os.WriteFile(p, []byte(`{"teams": {"b": {}}, "routes": [{"team": "b"}]}`), 0o600))
	waitClosed(t, changed)
	assert.NoError(t, f.Problem())
	team, _, _ = f.Table().Match(Question{})
	assert.Equal(t, "b", team)
}

func TestLoadRefusesAnInvalidFile(t *testing.T) {
	t.Parallel()
	p := filepath.Join(t.TempDir(), "routes.json")
	require.NoError(t, os.WriteFile(p, []byte(`{"teams": {}, "routes": [{"team": "x"}]}`), 0o600))
	_, err := Load(p, quiet())
	require.ErrorIs(t, err, ErrInvalid)
	assert.Contains(t, err.Error(), p)
	_, err = Load(filepath.Join(t.TempDir(), "none.json"), quiet())
	assert.True(t, errors.Is(err, os.ErrNotExist), "got %v", err)
}

func waitClosed(t *testing.T, ch <-chan struct{}) {
	t.Helper()
	select {
	case <-ch:
	case <-time.After(30 * time.Second):
		t.Fatal("the routes file was not reloaded within 30 s")
	}
}
