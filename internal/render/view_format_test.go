package render

import (
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

func TestClock(t *testing.T) {
	t.Parallel()
	cases := []struct {
		d    time.Duration
		want string
	}{
		{time.Millisecond, "0:01"},
		{59 * time.Second, "0:59"},
		{5*time.Minute + 1*time.Second, "5:01"},
		{2*time.Hour + 3*time.Minute + 4*time.Second, "2:03:04"},
	}
	for _, tc := range cases {
		assert.Equal(t, tc.want, clock(tc.d), "clock(%v)", tc.d)
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
	assert.Equal(t, 16, len([]rune(got)))
	assert.Equal(t, "aep://h…stance-1", got, "both ends kept")
	assert.Equal(t, "ééé…ééé", shorten("éééééééééé", 7), "cuts runes, not bytes")
}
