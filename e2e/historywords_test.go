package e2e

import (
	"bufio"
	"encoding/csv"
	"encoding/json"
	"net/http"
	"net/url"
	"slices"
	"strings"
	"testing"

	"github.com/PuerkitoBio/goquery"
	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/aepforms/aepforms/internal/agent"
)

// History finds an answer by any word its card showed: a choice's label
// ("eu-west", never its id "2"), a field's label ("Database"), the text
// typed under "Other", an option's label ("Allow once"), the question;
// and a word that was on no card finds nothing. The exports read without
// the form at hand: each answer carries what the agent received (ids)
// and the same answer in the card's words (labels, Other text marked).
func TestHistoryFindsAnAnswerByTheWordsOnItsCard(t *testing.T) {
	t.Parallel()
	s := startStack(t, stackOptions{})
	ag := s.startAgent(t, agentOptions{scenarios: []string{agent.ScenarioDeploy, agent.ScenarioPermission}})
	deploy, _ := askedRequest(t, ag, agent.ScenarioDeploy)
	perm, _ := askedRequest(t, ag, agent.ScenarioPermission)
	s.awaitRoster(t, deploy.ID, true)
	s.awaitRoster(t, perm.ID, true)
	s.awaitRespond(t, true)

	_, card, f := s.openForm(t, deploy.ID)
	db, regions := fieldNamed(t, card, "Database"), fieldNamed(t, card, "Regions")
	f.fill(t, fieldNamed(t, card, "Service name"), "payments-api")
	f.tick(t, regions, choiceValue(t, card, regions, "eu-west"), true)
	f.tick(t, db, "other", true)
	f.fill(t, db+"-other", "cockroach-eu")
	deployCmd := s.sendAndAccept(t, ag, deploy.ID, f, nil).ID
	_, _, g := s.openForm(t, perm.ID)
	permCmd := s.sendAndAccept(t, ag, perm.ID, g, g.button(t, "Allow once")).ID
	awaitHistory(t, s, func(rows []historyRow) bool {
		n := 0
		for _, r := range rows {
			if r.Recorded {
				n++
			}
		}
		return n == 2
	})

	search := func(q string) []string {
		t.Helper()
		p := s.getPage(t, "history?q="+url.QueryEscape(q))
		require.Equal(t, http.StatusOK, p.status, "History for %q: %s", q, p.body)
		var got []string
		p.doc.Find(`[data-testid="history-row"]`).Each(func(_ int, r *goquery.Selection) {
			got = append(got, r.AttrOr("data-command", ""))
		})
		return got
	}
	for _, tc := range []struct {
		q    string
		want []string
	}{
		{"eu-west", []string{deployCmd}},                // a choice's label
		{"Database", []string{deployCmd}},               // a field's label
		{"cockroach-eu", []string{deployCmd}},           // typed under Other
		{"payments-api", []string{deployCmd}},           // typed text
		{"new service deployment", []string{deployCmd}}, // the question
		{"Allow once", []string{permCmd}},               // an option's label
		{"zanzibar", nil},                               // on no card
	} {
		assert.Equal(t, tc.want, search(tc.q), "History searched for %q", tc.q)
	}

	// JSON lines: the ids the agent received, and the card's words.
	lines := map[string]map[string]any{}
	p := s.getPage(t, "history.jsonl")
	require.Equal(t, http.StatusOK, p.status)
	sc := bufio.NewScanner(strings.NewReader(p.body))
	for sc.Scan() {
		var m map[string]any
		require.NoError(t, json.Unmarshal(sc.Bytes(), &m))
		lines[m["command_id"].(string)] = m
	}
	require.Contains(t, lines, deployCmd)
	values := lines[deployCmd]["answer"].(map[string]any)["values"].(map[string]any)
	assert.Equal(t, []any{"2"}, values["regions"], "the id the agent received")
	assert.Equal(t, "cockroach-eu", values["db"], "typed Other text as the agent received it")
	words := lines[deployCmd]["answer_words"].(string)
	for _, w := range []string{"Regions", "eu-west", "Database", "cockroach-eu", "payments-api"} {
		assert.Contains(t, words, w, "answer_words reads without the form")
	}
	assert.Equal(t, "allow", lines[permCmd]["answer"].(map[string]any)["option"])
	assert.Contains(t, lines[permCmd]["answer_words"], "Allow once")

	// CSV: the same, by column.
	p = s.getPage(t, "history.csv")
	require.Equal(t, http.StatusOK, p.status)
	recs, err := csv.NewReader(strings.NewReader(p.body)).ReadAll()
	require.NoError(t, err)
	require.GreaterOrEqual(t, len(recs), 3)
	col := func(name string) int {
		i := slices.Index(recs[0], name)
		require.GreaterOrEqual(t, i, 0, "column %s in %v", name, recs[0])
		return i
	}
	byCmd := map[string][]string{}
	for _, r := range recs[1:] {
		byCmd[r[col("command_id")]] = r
	}
	require.Contains(t, byCmd, deployCmd)
	assert.Contains(t, byCmd[deployCmd][col("values")], `"regions":["2"]`, "ids")
	assert.Contains(t, byCmd[deployCmd][col("answer_words")], "eu-west", "labels")
	assert.Contains(t, byCmd[deployCmd][col("answer_words")], "cockroach-eu")
	assert.Equal(t, "Configure the new service deployment", byCmd[deployCmd][col("question_text")])
	assert.Equal(t, "allow", byCmd[permCmd][col("option")])
	assert.Contains(t, byCmd[permCmd][col("answer_words")], "Allow once")
}
