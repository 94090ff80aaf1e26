package aep

import (
	"encoding/json"
	"testing"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
)

func TestAnswerJSON(t *testing.T) {
	t.Parallel()
	text := "go"
	cases := []struct {
		name string
		a    Answer
		want string
	}{
		{"empty values kept", Answer{Values: Values{}}, `{"values":{}}`},
		{"nil values omitted", Answer{Option: "allow"}, `{"option":"allow"}`},
		{"values", Answer{Values: Values{"n": json.Number("3")}}, `{"values":{"n":3}}`},
		{"text", Answer{Text: &text}, `{"text":"go"}`},
	}
	for _, c := range cases {
		t.Run(c.name, func(t *testing.T) {
			t.Parallel()
			b, err := json.Marshal(c.a)
			require.NoError(t, err)
			assert.JSONEq(t, c.want, string(b))
			b, err = json.Marshal(Respond{Answer: c.a})
			require.NoError(t, err)
			assert.JSONEq(t, `{"answer":`+c.want+`}`, string(b), "inside a respond payload")
		})
	}
}
