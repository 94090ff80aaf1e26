package form

import (
	"bufio"
	"encoding/json"
	"net/url"
	"os"
	"testing"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/aepforms/aepforms/internal/aep"
)

// answerGoldenPath is the AEP golden corpus (fixtures are never edited).
const answerGoldenPath = "../../../testdata/aep/fixtures/golden/golden.jsonl"

// answerGoldenForm returns the s_form request of the golden corpus and the
// answer its attention.answered records.
func answerGoldenForm(t *testing.T) (aep.Request, aep.Answered) {
	t.Helper()
	f, err := os.Open(answerGoldenPath)
	require.NoError(t, err)
	t.Cleanup(func() { _ = f.Close() })
	var req aep.Request
	var answered aep.Answered
	var haveReq, haveAnswered bool
	sc := bufio.NewScanner(f)
	sc.Buffer(make([]byte, 0, 64*1024), 1<<20)
	for sc.Scan() {
		if len(sc.Bytes()) == 0 {
			continue
		}
		ev, err := aep.Decode(sc.Bytes())
		require.NoError(t, err, "golden line %q", sc.Text())
		if ev.Session() != "s_form" {
			continue
		}
		switch ev.Type() {
		case "attention.requested":
			require.NoError(t, ev.DecodeData(&req))
			haveReq = true
		case "attention.answered":
			require.NoError(t, ev.DecodeData(&answered))
			haveAnswered = true
		}
	}
	require.NoError(t, sc.Err())
	require.True(t, haveReq && haveAnswered, "golden corpus: s_form requested and answered not found")
	return req, answered
}

func TestParseAnswerGoldenForm(t *testing.T) {
	t.Parallel()
	req, answered := answerGoldenForm(t)
	// As a browser posts the deploy form: the name typed, staging ticked,
	// the first and third regions ticked, Other chosen for the database.
	form := url.Values{
		"token":    {"t1"},
		"f0":       {"billing-api"},
		"f1":       {"on"},
		"f2":       {"0", "2"},
		"f3":       {"other"},
		"f3-other": {"MariaDB"},
	}
	ans, problems := ParseAnswer(req, form)
	require.Empty(t, problems, "problems: got %v, want none", problems)
	assert.Equal(t, answered.Answer.Values, ans.Values, "values: got %#v, want the corpus's %#v", ans.Values, answered.Answer.Values)

	got, err := json.Marshal(aep.Respond{Answer: ans})
	require.NoError(t, err)
	want, err := json.Marshal(aep.Respond{Answer: answered.Answer})
	require.NoError(t, err)
	assert.JSONEq(t, string(want), string(got), "respond data: got %s, want %s", got, want)
	assert.Empty(t, aep.ValidateValues(req.Fields, ans.Values), "ValidateValues on the golden answer")
}
