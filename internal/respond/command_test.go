package respond

import (
	"encoding/json"
	"os"
	"testing"

	"github.com/aepforms/aepforms/internal/inbox"

	"github.com/aepforms/aepforms/internal/aep"
	"github.com/oklog/ulid/v2"
	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
)

func TestBuildEnvelope(t *testing.T) {
	t.Parallel()
	_, fields := formAnswer()
	text := "ship it, but\nafter lunch"
	strField := []aep.FieldSpec{{ID: "why", Type: aep.FieldString, Label: "Why"}}
	otherField := []aep.FieldSpec{{ID: "pick", Type: aep.FieldSelect, Label: "Pick", Other: true,
		Choices: []aep.Choice{{ID: "a", Label: "A"}}}}
	multi := []aep.FieldSpec{{ID: "m", Type: aep.FieldSelect, Label: "M", Multi: true,
		Choices: []aep.Choice{{ID: "a", Label: "A"}, {ID: "b", Label: "B"}}}}
	const head = `{"aep":"0.1","id":"01J0000000000000000000CMD1","type":"control.attention.respond","subject":"R1","time":"2026-07-03T10:00:00.000Z","source":"aep://host-a/ui/aepforms",`
	cases := []struct {
		name   string
		answer aep.Answer
		fields []aep.FieldSpec
		by     string
		want   string
	}{
		{
			name:   "ids numbers booleans are metadata",
			answer: aep.Answer{Values: aep.Values{"n": json.Number("3"), "ok": true, "pick": "b"}},
			fields: fields, by: "alice",
			want: head + `"agent":"aepforms/alice","session":"s 1:x","cause":"R1","capture":"metadata","data":{"answer":{"values":{"n":3,"ok":true,"pick":"b"}}}}`,
		},
		{
			name:   "a string field is operator text: full",
			answer: aep.Answer{Values: aep.Values{"why": "because"}},
			fields: strField,
			want:   head + `"agent":"aepforms","session":"s 1:x","cause":"R1","capture":"full","data":{"answer":{"values":{"why":"because"}}}}`,
		},
		{
			name:   "other text on a select is full",
			answer: aep.Answer{Values: aep.Values{"pick": "something else"}},
			fields: otherField,
			want:   head + `"agent":"aepforms","session":"s 1:x","cause":"R1","capture":"full","data":{"answer":{"values":{"pick":"something else"}}}}`,
		},
		{
			name:   "multi select ids are metadata",
			answer: aep.Answer{Values: aep.Values{"m": []any{"a", "b"}}},
			fields: multi,
			want:   head + `"agent":"aepforms","session":"s 1:x","cause":"R1","capture":"metadata","data":{"answer":{"values":{"m":["a","b"]}}}}`,
		},
		{
			name:   "an option is metadata",
			answer: aep.Answer{Option: "deny"},
			want:   head + `"agent":"aepforms","session":"s 1:x","cause":"R1","capture":"metadata","data":{"answer":{"option":"deny"}}}`,
		},
		{
			name:   "free text is full, never redacted",
			answer: aep.Answer{Text: &text},
			want:   head + `"agent":"aepforms","session":"s 1:x","cause":"R1","capture":"full","data":{"answer":{"text":"ship it, but\nafter lunch"}}}`,
		},
	}
	c := New(testConfig("http://127.0.0.1:1"))
	for _, tc := range cases {
		t.Run(tc.name, func(t *testing.T) {
			t.Parallel()
			cmd, err := c.build(inbox.Submission{
				Card: "card", Key: inbox.RequestKey{Session: "s 1:x", RequestID: "R1"}, Answer: tc.answer,
				Fields: tc.fields, By: tc.by, CommandID: "01J0000000000000000000CMD1",
			})
			require.NoError(t, err)
			assert.Equal(t, tc.want, string(cmd.raw), "command bytes: got, want")
			ev, err := aep.Decode(cmd.raw)
			require.NoError(t, err)
			require.NoError(t, aep.ValidateEnvelope(ev), "the command must be a valid envelope")
			_, hasSeq := ev.Seq()
			assert.False(t, hasSeq, "a command carries no seq")
			assert.Equal(t, "01J0000000000000000000CMD1", cmd.id)
		})
	}
}

func TestBuildDefaults(t *testing.T) {
	t.Parallel()
	cfg := testConfig("http://127.0.0.1:1")
	cfg.Source, cfg.Instance = "", ""
	c := New(cfg)
	host, err := os.Hostname()
	require.NoError(t, err)
	assert.Equal(t, "aep://"+host+"/ui/aepforms", c.cfg.Source, "default source")
	assert.Equal(t, DefaultAgent, c.cfg.Agent, "default agent")

	cmd, err := c.build(submission("s1", "c1"))
	require.NoError(t, err)
	ev, err := aep.Decode(cmd.raw)
	require.NoError(t, err)
	id, err := ulid.ParseStrict(ev.ID())
	require.NoError(t, err, "a minted command id is a ULID, got %q", ev.ID())
	assert.Equal(t, testNow.UnixMilli(), int64(id.Time()), "the ULID time is the client's clock")
	assert.Equal(t, "aep://"+host+"/ui/aepforms", ev.Source())
	assert.NotEqual(t, c.newCommandID(), c.newCommandID(), "ids are unique")
}

func TestBuildRefuses(t *testing.T) {
	t.Parallel()
	c := New(testConfig("http://127.0.0.1:1"))
	a, _ := formAnswer()
	cases := map[string]inbox.Submission{
		"no session":    {Key: inbox.RequestKey{RequestID: "R"}, Answer: a},
		"no request id": {Key: inbox.RequestKey{Session: "s"}, Answer: a},
		"empty answer":  {Key: inbox.RequestKey{Session: "s", RequestID: "R"}},
	}
	for name, s := range cases {
		t.Run(name, func(t *testing.T) {
			t.Parallel()
			_, err := c.build(s)
			require.ErrorIs(t, err, ErrInvalid)
		})
	}
}
