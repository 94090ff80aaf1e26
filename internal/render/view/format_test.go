package view

import (
	"strings"
	"testing"
	"time"

	"github.com/stretchr/testify/assert"
)

func TestRelTime(t *testing.T) {
	t.Parallel()
	cases := []struct {
		ago  time.Duration
		want string
	}{
		{-time.Minute, "just now"},
		{10 * time.Second, "just now"},
		{60 * time.Second, "1 min ago"},
		{14*time.Minute + 40*time.Second, "15 min ago"},
		{3*time.Hour + 59*time.Minute, "3 h ago"},
		{72 * time.Hour, "3 d ago"},
	}
	for _, tc := range cases {
		assert.Equal(t, tc.want, relTime(viewNow.Add(-tc.ago), viewNow), "relTime(-%v)", tc.ago)
	}
}

func TestFormatDuration(t *testing.T) {
	t.Parallel()
	assert.Equal(t, "45 s", formatDuration(45*time.Second))
	assert.Equal(t, "5 min", formatDuration(5*time.Minute))
	assert.Equal(t, "2 h", formatDuration(2*time.Hour))
	assert.Equal(t, "1 h 30 min", formatDuration(90*time.Minute))
}

func TestShorten(t *testing.T) {
	t.Parallel()
	assert.Equal(t, "short", shorten("short", 16))
	got := shorten("aep://host.example/agents/claude-code/instance-1", 16)
	assert.Equal(t, 17, len([]rune(got)), "16 visible runes and a word joiner")
	assert.Equal(t, "aep://h…\u2060stance-1", got, "both ends kept, never broken after the ellipsis")
	assert.Equal(t, "ééé…\u2060ééé", shorten("éééééééééé", 7), "cuts runes, not bytes")
}

func TestShortenID(t *testing.T) {
	t.Parallel()
	cases := []struct{ id, want string }{
		{"s_payments", "s_payments"},
		{"run-01M8VQRPTD5287ZA246P4ZCYGH", "run-01M8VQRPTD5287ZA246P4ZCYGH"}, // 30 runes: whole
		{"every-type-01M8VQRPTD5287ZA246HK4HWD8", "every-type-…\u20606HK4HWD8"},
		{"ask-user-question-metadata-01M8VQRPTD5287ZA245Y0Y8N3K", "ask-user-question-…\u20605Y0Y8N3K"},
		{"3f2a9c1e-8b7d-4c2a-9e1f-0a1b2c3d4e5f", "3f2a9c1e-8b7d-4c2a-…\u20602c3d4e5f"},
		{"01M8VQRPTD5287ZA245Y0Y8N3K01M8VQRPTD", "01M8VQRPTD5287ZA245Y0Y8…\u2060M8VQRPTD"}, // no separator: cut where it must
	}
	for _, tc := range cases {
		got := shortenID(tc.id, idRunes)
		assert.Equal(t, tc.want, got, "shortenID(%q)", tc.id)
		assert.LessOrEqual(t, len([]rune(strings.ReplaceAll(got, "\u2060", ""))), idRunes, "shortenID(%q) fits", tc.id)
	}
}
