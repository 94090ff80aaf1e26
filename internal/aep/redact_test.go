package aep

import (
	"encoding/json"
	"testing"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
)

type redactionCorpus struct {
	TextCases []struct {
		Name  string `json:"name"`
		Input string `json:"input"`
		Opts  *struct {
			SecretValues []string `json:"secretValues"`
			Home         string   `json:"home"`
			PII          *bool    `json:"pii"`
		} `json:"opts"`
		MustContain    []string `json:"must_contain"`
		MustNotContain []string `json:"must_not_contain"`
	} `json:"text_cases"`
	ValueCases []struct {
		Name           string   `json:"name"`
		Input          any      `json:"input"`
		MustContain    []string `json:"must_contain"`
		MustNotContain []string `json:"must_not_contain"`
	} `json:"value_cases"`
}

func TestRedactionFixtures(t *testing.T) {
	t.Parallel()
	var c redactionCorpus
	readFixture(t, "redaction/cases.json", &c)
	var names []string
	for _, tc := range c.TextCases {
		names = append(names, tc.Name)
	}
	requireNames(t, "redaction text", names, []string{
		"PEM block, multiline", "PEM block, OPENSSH variant", "AWS access key id, bare",
		"Bearer token, canonical case", "bearer token, lowercase scheme (RFC 6750 schemes are case-insensitive)",
		"bearer as prose is not over-redacted", "key=value assignment, plain", "key: value assignment with spaces",
		"JSON-quoted credential assignment (quote between key and colon)", "JSON-quoted api_key",
		"value on next line after key=", "JWT-shaped string, bare", "GitHub classic PAT, bare (no key= prefix)",
		"GitHub fine-grained PAT, bare", "GitLab PAT, bare", "Slack bot token, bare", "OpenAI-style sk- key, bare",
		"Google API key, bare", "operator-configured secret value (rule b)", "operator home path replaced (rule c)",
		"any /home/<user> path replaced (hardening beyond floor)", "macOS /Users/<user> path replaced (hardening beyond floor)",
		"email redacted as PII (rule d, on by default)", "phone number redacted as PII",
		"PII pass-through when operator disables rule d", "secret rule wins over PII inside credential value (order a before d)",
		"plain prose untouched", "version numbers are not phone numbers",
	})
	names = nil
	for _, tc := range c.ValueCases {
		names = append(names, tc.Name)
	}
	requireNames(t, "redaction value", names, []string{
		"credential-named object key: value dropped even without pattern match",
		"credential-named key, nested + case variants", "authorization header object value dropped",
		"secrets inside array strings", "non-string values untouched",
	})

	for _, tc := range c.TextCases {
		t.Run("text/"+tc.Name, func(t *testing.T) {
			t.Parallel()
			got := Redact(tc.Input)
			if tc.Opts != nil {
				opts := RedactOptions{SecretValues: tc.Opts.SecretValues, Home: tc.Opts.Home}
				if tc.Opts.PII != nil {
					opts.KeepPII = !*tc.Opts.PII
				}
				got = NewRedactor(opts).Text(tc.Input)
			}
			for _, s := range tc.MustContain {
				assert.Contains(t, got, s, "input %q", tc.Input)
			}
			for _, s := range tc.MustNotContain {
				assert.NotContains(t, got, s, "input %q", tc.Input)
			}
		})
	}
	for _, tc := range c.ValueCases {
		t.Run("value/"+tc.Name, func(t *testing.T) {
			t.Parallel()
			before, err := json.Marshal(tc.Input)
			require.NoError(t, err)
			out, err := json.Marshal(RedactValue(tc.Input))
			require.NoError(t, err)
			for _, s := range tc.MustContain {
				assert.Contains(t, string(out), s)
			}
			for _, s := range tc.MustNotContain {
				assert.NotContains(t, string(out), s)
			}
			after, err := json.Marshal(tc.Input)
			require.NoError(t, err)
			assert.Equal(t, string(before), string(after), "input not modified")
		})
	}
}

func TestRedactMore(t *testing.T) {
	t.Parallel()
	cases := []struct{ name, in, want string }{
		{"quoted value keeps its quotes", `{"token": "abc123456"}`, `{"token": "[REDACTED:secret]"}`},
		{"authorization basic", "Authorization: Basic dXNlcjpwYXNz", "Authorization: " + RedactedSecret},
		{"unterminated PEM", "key:\n-----BEGIN PRIVATE KEY-----\nMIIE", "key:\n" + RedactedSecret},
		{"file URL under home", "file:///home/bob/x", "file://~/x"},
		{"home inside another path kept", "/var/home/bob/x", "/var/home/bob/x"},
		{"durations are not phones", "took 1240 ms and 69000 ms", "took 1240 ms and 69000 ms"},
		{"dates are not phones", "2026-07-03T10:15:04Z", "2026-07-03T10:15:04Z"},
		{"phone with dashes", "ring 555-123-4567.", "ring " + RedactedPII + "."},
		{"token counts are prose", "used 142 input tokens", "used 142 input tokens"},
	}
	for _, tc := range cases {
		t.Run(tc.name, func(t *testing.T) {
			t.Parallel()
			assert.Equal(t, tc.want, Redact(tc.in))
		})
	}
	t.Run("configured home exact", func(t *testing.T) {
		t.Parallel()
		r := NewRedactor(RedactOptions{Home: "/srv/op/"})
		assert.Equal(t, "at ~ and ~/x but /srv/opx", r.Text("at /srv/op and /srv/op/x but /srv/opx"))
	})
	t.Run("numbers under credential keys untouched", func(t *testing.T) {
		t.Parallel()
		in := map[string]any{"gen_ai.usage.input_tokens": 142.0, "max_token": 5.0}
		assert.Equal(t, in, RedactValue(in))
	})
}
