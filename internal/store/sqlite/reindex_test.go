package sqlite

import (
	"context"
	"strings"
	"testing"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/aepforms/aepforms/internal/aep"
	"github.com/aepforms/aepforms/internal/inbox"
	"github.com/aepforms/aepforms/internal/store"
)

// An answer journaled before History searched labels (schema version 8,
// its search text the question and the ids only) is found by the words
// its card showed once the journal is opened by this build: opening it
// writes the old rows' search text again from the field specs and
// options the row kept.
func TestOldRowsAreFoundByTheirLabels(t *testing.T) {
	t.Parallel()
	path := tempPath(t)
	form := submission(cmdID(1), t0)
	form.Question = "Where and when should the release go?"
	form.Fields = []aep.FieldSpec{
		{ID: "branch", Type: aep.FieldSelect, Label: "Branch", Choices: []aep.Choice{{ID: "release", Label: "release/2.4"}, {ID: "main", Label: "main"}}},
		{ID: "regions", Type: aep.FieldSelect, Multi: true, Label: "Regions", Choices: []aep.Choice{{ID: "1", Label: "eu-west"}, {ID: "2", Label: "us-east"}}},
		{ID: "window", Type: aep.FieldSelect, Label: "Window", Choices: []aep.Choice{{ID: "2200", Label: "Tonight 22:00"}}},
	}
	form.Answer = aep.Answer{Values: aep.Values{"branch": "release", "regions": []any{"1"}, "window": "2200"}}
	perm := submission(cmdID(2), t0.Add(1))
	perm.Key.RequestID, perm.Card = "r-perm", "card-perm"
	perm.Kind, perm.Question, perm.Fields = aep.KindPermission, "Run make release?", nil
	perm.Options = []aep.Option{{ID: "allow", Label: "Allow once"}, {ID: "deny", Label: "Deny"}}
	perm.Answer = aep.Answer{Option: "allow"}

	j := openAt(t, path, Options{})
	require.NoError(t, j.Record(form))
	require.NoError(t, j.Record(perm))
	// The old shape: the search text as it was written before labels
	// (question, option, text, values), and schema version 8.
	old := func(s inbox.Submission) string {
		s.Fields, s.Options = nil, nil
		return store.SearchText(s)
	}
	for _, s := range []inbox.Submission{form, perm} {
		_, err := j.db.Exec(`UPDATE submissions SET search = ? WHERE command_id = ?`, old(s), s.CommandID)
		require.NoError(t, err)
	}
	// This build's History reads the routing history too: its table
	// goes only once the old shape has been searched.
	_, err := j.db.Exec(strings.Replace(undoSearchVersion, undoRoutingLog, "", 1) + `DELETE FROM schema_migrations WHERE version >= 9`)
	require.NoError(t, err)
	found := func(j *Journal, text string) []string {
		page, err := j.History(context.Background(), store.HistoryQuery{Text: text})
		require.NoError(t, err)
		var ids []string
		for _, e := range page.Entries {
			ids = append(ids, e.Submission.CommandID)
		}
		return ids
	}
	require.Empty(t, found(j, "eu-west"), "the old shape is found by ids only")
	require.Equal(t, []string{cmdID(1)}, found(j, "2200"))
	_, err = j.db.Exec(undoRoutingLog)
	require.NoError(t, err)
	require.NoError(t, j.Close())

	j = openAt(t, path, Options{})
	for _, c := range []struct {
		word string
		want []string
	}{
		{"release/2.4", []string{cmdID(1)}},
		{"EU-WEST", []string{cmdID(1)}},
		{"22:00", []string{cmdID(1)}},
		{"2200", []string{cmdID(1)}},
		{"allow once", []string{cmdID(2)}},
		{"us-east", nil},
	} {
		assert.Equal(t, c.want, found(j, c.word), "History search %q", c.word)
	}
	var stale int
	require.NoError(t, j.db.QueryRow(`SELECT count(*) FROM submissions WHERE search_version < ?`, store.SearchVersion).Scan(&stale))
	assert.Zero(t, stale, "every row is at the current search version")
	assert.True(t, strings.Contains(old(form), "2200"))
}
