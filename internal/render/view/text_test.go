package view

import (
	"net/url"
	"reflect"
	"strings"
	"testing"
	"unicode"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/aepforms/aepforms/e2e/samples"
	"github.com/aepforms/aepforms/internal/aep"
	"github.com/aepforms/aepforms/internal/inbox"
)

func TestText(t *testing.T) {
	t.Parallel()
	cases := []struct{ name, in, want string }{
		{"plain text as is", "Deploy to prod?", "Deploy to prod?"},
		{"tab and newline kept", "a\tb\nc", "a\tb\nc"},
		{"CR LF and CR are line breaks", "a\r\nb\rc", "a\nb\nc"},
		{"NUL", "dele\x00te", "dele\uFFFDte"},
		{"escape sequence", "\x1b[31mred", "\uFFFD[31mred"},
		{"DEL", "a\x7fb", "a\uFFFDb"},
		{"C1 NEL and CSI", "a\u0085b\u009bc", "a\uFFFDb\uFFFDc"},
		{"bidi and zero-width left to the other rules", "\u202eab\u200b", "\u202eab\u200b"},
		{"non-Latin text as is", "Ünïcødé ✓ Ελληνικά עברית", "Ünïcødé ✓ Ελληνικά עברית"},
	}
	for _, tc := range cases {
		t.Run(tc.name, func(t *testing.T) {
			t.Parallel()
			assert.Equal(t, tc.want, Text(tc.in), "Text(%q)", tc.in)
		})
	}
}

func TestMarked(t *testing.T) {
	t.Parallel()
	cases := []struct{ in, want string }{
		{"\u202edorp eteled\u202c", "⟨U+202E⟩dorp eteled⟨U+202C⟩"},
		{"a\u202ab\u202bc\u202dd", "a⟨U+202A⟩b⟨U+202B⟩c⟨U+202D⟩d"},
		{"\u2066x\u2067y\u2068z\u2069", "⟨U+2066⟩x⟨U+2067⟩y⟨U+2068⟩z⟨U+2069⟩"},
		{"dele\u200bte prod", "dele\u200bte prod"}, // zero-width: marked only when choices look alike
		{"nul\x00", "nul\uFFFD"},
		{"prod", "prod"},
	}
	for _, tc := range cases {
		assert.Equal(t, tc.want, Marked(tc.in), "Marked(%q)", tc.in)
	}
}

// selectCard is an open form card with one select field of these choice labels.
func selectCard(labels ...string) inbox.Card {
	f := aep.FieldSpec{ID: "target", Type: aep.FieldSelect, Label: "Target", Required: true}
	for i, l := range labels {
		f.Choices = append(f.Choices, aep.Choice{ID: string(rune('a' + i)), Label: l})
	}
	return viewCard(aep.Request{Kind: aep.KindForm, Prompt: "Which?", Fields: []aep.FieldSpec{f}, RespondVia: []string{aep.ViaControl}})
}

func choiceLabels(t *testing.T, v CardView) []string {
	t.Helper()
	require.NotNil(t, v.Form)
	require.Len(t, v.Form.Fields, 1)
	var out []string
	for _, c := range v.Form.Fields[0].Choices {
		out = append(out, c.Label)
	}
	return out
}

func TestLookAlikeChoices(t *testing.T) {
	t.Parallel()
	cases := []struct {
		name   string
		labels []string
		want   []string
		alike  bool
	}{
		{"the attack run's three choices",
			[]string{"delete prod", "\u202edorp eteled\u202c", "dele\u200bte prod"},
			[]string{"delete prod", "⟨U+202E⟩dorp eteled⟨U+202C⟩", "dele⟨U+200B⟩te prod"}, true},
		{"case and width", []string{"Prod", "ｐｒｏｄ"}, []string{"Prod", "ｐｒｏｄ"}, true},
		{"BOM and word joiner", []string{"\ufeffstaging", "stag\u2060ing", "prod"}, []string{"⟨U+FEFF⟩staging", "stag⟨U+2060⟩ing", "prod"}, true},
		{"ZWJ in Latin text", []string{"prod", "pr\u200dod"}, []string{"prod", "pr⟨U+200D⟩od"}, true},
		{"ZWNJ that Persian needs is kept", []string{"می\u200cخواهم", "میخواهم", "no"}, []string{"می\u200cخواهم", "میخواهم", "no"}, false},
		{"emoji ZWJ sequence is kept", []string{"👩\u200d💻", "👩💻"}, []string{"👩\u200d💻", "👩💻"}, false},
		{"zero-width alone is not marked", []string{"dele\u200bte prod", "keep prod"}, []string{"dele\u200bte prod", "keep prod"}, false},
		{"distinct choices", []string{"Staging", "Production"}, []string{"Staging", "Production"}, false},
	}
	for _, tc := range cases {
		t.Run(tc.name, func(t *testing.T) {
			t.Parallel()
			v := Card(selectCard(tc.labels...), viewOpts())
			assert.Equal(t, tc.want, choiceLabels(t, v))
			if tc.alike {
				assert.Equal(t, "These choices look alike: check which one you mean before you choose.", v.Form.Fields[0].LookAlike)
			} else {
				assert.Empty(t, v.Form.Fields[0].LookAlike)
			}
		})
	}
}

func TestAgentTextBidiMarkersInLabels(t *testing.T) {
	t.Parallel()
	req := aep.Request{Kind: aep.KindPermission, Prompt: "Run it?", RespondVia: []string{aep.ViaControl},
		Options: []aep.Option{{ID: "allow", Label: "Allow\u202e"}, {ID: "deny", Label: "Deny"}}}
	v := Card(viewCard(req), viewOpts())
	require.NotNil(t, v.Form)
	assert.Equal(t, "Allow⟨U+202E⟩", v.Form.Options[0].Label)

	form := selectCard("a", "b")
	form.Request.Fields[0].Label = "Tar\u2067get\x00"
	v = Card(form, viewOpts())
	assert.Equal(t, "Tar⟨U+2067⟩get\uFFFD", v.Form.Fields[0].Label, "a U+0000 in a label becomes U+FFFD")
}

// TestNoControlReachesTheView fills every agent string of a card with
// controls and checks that no string of its view holds one.
func TestNoControlReachesTheView(t *testing.T) {
	t.Parallel()
	const bad = "x\x00\x01\x1b\x7f\u0085\u009f\r"
	req := samples.EveryFieldForm()
	req.Prompt += bad
	for i := range req.Fields {
		f := &req.Fields[i]
		f.Label += bad
		f.ID += bad
		for j := range f.Choices {
			f.Choices[j].Label += bad
			f.Choices[j].ID += bad
		}
	}
	c := viewCard(req)
	c.Agent += bad
	c.Run += bad
	c.Key.Session += bad
	c.Key.Source += bad
	c.Routes = []inbox.Route{{To: "ops" + bad, Via: "slack" + bad}}
	c.Responders = []inbox.Responder{{Agent: "other" + bad}}
	opts := viewOpts()
	opts.Input = url.Values{"f0": {"typed" + bad}}
	opts.Problems = []aep.Problem{{Field: req.Fields[0].ID, Code: "x", Message: "fix" + bad}}

	for _, v := range []CardView{Card(c, opts), Card(settledWith(c, bad), opts)} {
		walkStrings(reflect.ValueOf(v), "CardView", func(path, s string) {
			assert.False(t, strings.ContainsFunc(s, func(r rune) bool { return unicode.IsControl(r) && r != '\t' && r != '\n' }),
				"%s: got %q, want no control characters but tab and newline", path, s)
		})
	}
}

func settledWith(c inbox.Card, bad string) inbox.Card {
	c.State = inbox.StateAnswered
	c.Recorded = &inbox.Recorded{By: "op" + bad, Via: "control" + bad, Capture: aep.CaptureFull,
		Answer: aep.Answer{Values: aep.Values{c.Request.Fields[0].ID: "v" + bad}}}
	return c
}

func walkStrings(v reflect.Value, path string, f func(path, s string)) {
	switch v.Kind() {
	case reflect.String:
		f(path, v.String())
	case reflect.Pointer:
		if !v.IsNil() {
			walkStrings(v.Elem(), path, f)
		}
	case reflect.Struct:
		for i := 0; i < v.NumField(); i++ {
			walkStrings(v.Field(i), path+"."+v.Type().Field(i).Name, f)
		}
	case reflect.Slice, reflect.Array:
		for i := 0; i < v.Len(); i++ {
			walkStrings(v.Index(i), path+"[]", f)
		}
	}
}

func TestStateLineSaysOtherWasSentAsAChoice(t *testing.T) {
	t.Parallel()
	post := url.Values{"f0": {"billing"}, "f3": {"other"}, "f3-other": {"sqlite"}}
	c := viewCard(samples.DeployForm())
	c.Submission = &inbox.Submission{State: inbox.SubmissionSending, Form: post,
		Answer: aep.Answer{Values: aep.Values{"name": "billing", "staged": false, "regions": []any{}, "db": "2"}}}
	s := Card(c, viewOpts()).State
	require.Len(t, s.Notes, 1)
	assert.Equal(t, "Other “sqlite” was sent as the choice “SQLite”", s.Notes[0].Text)
	assert.Equal(t, []Span{{Text: "Other “"}, {Text: "sqlite", Agent: true}, {Text: "” was sent as the choice “"},
		{Text: "SQLite", Agent: true}, {Text: "”"}}, s.Notes[0].Spans)

	c.State = inbox.StateAnswered
	c.Recorded = &inbox.Recorded{By: "alice", Via: "control", Capture: aep.CaptureFull, Answer: c.Submission.Answer}
	s = Card(c, viewOpts()).State
	require.Equal(t, "answered", s.Kind)
	require.Len(t, s.Notes, 1, "the answered card still says how the Other text was read")
	c.AnsweredElsewhere = true
	assert.Empty(t, Card(c, viewOpts()).State.Notes, "an answer from elsewhere is not this post's")

	c.AnsweredElsewhere = false
	c.Submission.Form = url.Values{"f0": {"billing"}, "f3-other": {"MariaDB"}}
	assert.Empty(t, Card(c, viewOpts()).State.Notes, "other text sent as typed needs no note")
}

func TestStateLineSpansIsolateAgentWords(t *testing.T) {
	t.Parallel()
	c := viewCard(aep.Request{Kind: aep.KindInput, Prompt: "?"})
	c.State = inbox.StateAnswered
	c.Recorded = &inbox.Recorded{By: "alice\u202e", Via: "x\u202e", Capture: aep.CaptureFull}
	s := Card(c, viewOpts()).State
	assert.Equal(t, "Answered by alice\u202e via x\u202e", s.Text)
	assert.Equal(t, []Span{{Text: "Answered by "}, {Text: "alice\u202e", Agent: true}, {Text: " via "}, {Text: "x\u202e", Agent: true}}, s.Spans)
}

func TestPageTextIsSafe(t *testing.T) {
	t.Parallel()
	status := inbox.Status{FeedConnected: false, FeedError: "reset\x00",
		Notices: []inbox.Notice{{Session: "s\u202e1", Message: "events may be missing for session s\u202e1\x07"}}}
	p := Page([]inbox.Card{viewCard(aep.Request{Kind: aep.KindInput, Prompt: "?"})}, status,
		PageOptions{Now: viewNow, Operator: "ann\x1b", Filter: inbox.Query{Agent: "a\x00"}})
	require.Len(t, p.Notices, 1)
	assert.True(t, strings.HasPrefix(p.Notices[0], "events may be missing for session s⟨U+202E⟩1: "), "got %q", p.Notices[0])
	require.Len(t, p.NoticeTitles, 1)
	assert.Equal(t, "s⟨U+202E⟩1", p.NoticeTitles[0], "the whole session, in the title, marked too")
	assert.Equal(t, "reset\uFFFD", p.Relay.Error)
	assert.Equal(t, "ann\uFFFD", p.Operator)
	require.Len(t, p.Filter, 1)
	assert.Equal(t, "a\uFFFD", p.Filter[0].Value)
	require.Len(t, p.Groups, 1)
	assert.NotContains(t, p.Groups[0].Label, "\u202e")
}

func TestSignInNameIsSafe(t *testing.T) {
	t.Parallel()
	assert.Equal(t, "ann\uFFFD", SignIn("/", Assets{}, "", "ann\x00").Name)
}

func TestGroupLabelMarksBidiControls(t *testing.T) {
	t.Parallel()
	c := viewCard(aep.Request{Kind: aep.KindInput, Prompt: "?"})
	c.Agent = "evil\u202eagent"
	v := Card(c, viewOpts())
	assert.True(t, strings.HasPrefix(v.GroupLabel, "evil⟨U+202E⟩agent"), "group label %q: the script sets it as plain text, so its controls are marked", v.GroupLabel)
	assert.Equal(t, "evil\u202eagent", v.Prov.Agent, "the provenance shows the name as given, isolated by the components")
}

func TestLookAlikeOptions(t *testing.T) {
	t.Parallel()
	req := aep.Request{Kind: aep.KindPermission, Prompt: "Run it?", RespondVia: []string{aep.ViaControl},
		Options: []aep.Option{{ID: "allow", Label: "Allow"}, {ID: "deny", Label: "Al\u200blow"}}}
	v := Card(viewCard(req), viewOpts())
	require.NotNil(t, v.Form)
	assert.Equal(t, "Allow", v.Form.Options[0].Label)
	assert.Equal(t, "Al⟨U+200B⟩low", v.Form.Options[1].Label)
	assert.Equal(t, "These options look alike: check which one you mean before you choose.", v.Form.OptionsLookAlike)

	req.Options[1].Label = "Deny"
	assert.Empty(t, Card(viewCard(req), viewOpts()).Form.OptionsLookAlike)
}
