package aep

import (
	"errors"
	"testing"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
)

func TestDecode(t *testing.T) {
	t.Parallel()
	t.Run("pretty input becomes one line, order and unknown members kept", func(t *testing.T) {
		t.Parallel()
		in := "{\n  \"type\": \"run.started\",\n  \"zeta\": 1,\n  \"aep\": \"0.1\",\n  \"data\": {\"b\": [1, 2], \"a\": \"x y\"}\n}\n"
		e, err := Decode([]byte(in))
		require.NoError(t, err)
		assert.Equal(t, `{"type":"run.started","zeta":1,"aep":"0.1","data":{"b":[1,2],"a":"x y"}}`, string(e.Raw()))
		assert.JSONEq(t, `{"b":[1,2],"a":"x y"}`, string(e.Data()))
		v, ok := e.Member("zeta")
		assert.True(t, ok)
		assert.Equal(t, "1", string(v))
		assert.ElementsMatch(t, []string{"type", "zeta", "aep", "data"}, e.Members())
	})
	t.Run("defaults and accessors", func(t *testing.T) {
		t.Parallel()
		e, err := Decode([]byte(`{"aep":"0.1","id":"i","type":"tool.failed","subject":"Bash","time":"t","source":"aep://s","agent":"a","session":"s:1 x","run":"r","step":"p","seq":7,"cause":"c","traceparent":"tp"}`))
		require.NoError(t, err)
		assert.Equal(t, "0.1", e.AEP())
		assert.Equal(t, "i", e.ID())
		assert.Equal(t, "tool.failed", e.Type())
		assert.Equal(t, "Bash", e.Subject())
		assert.Equal(t, "t", e.Time())
		assert.Equal(t, "aep://s", e.Source())
		assert.Equal(t, "a", e.Agent())
		assert.Equal(t, "s:1 x", e.Session())
		assert.Equal(t, "r", e.Run())
		assert.Equal(t, "p", e.Step())
		assert.Equal(t, "c", e.Cause())
		assert.Equal(t, "tp", e.Traceparent())
		assert.Equal(t, SeverityInfo, e.Severity(), "default severity")
		assert.Equal(t, CaptureMetadata, e.Capture(), "default capture")
		assert.Equal(t, int64(0), e.Epoch(), "default epoch")
		seq, ok := e.Seq()
		assert.True(t, ok)
		assert.Equal(t, int64(7), seq)
		pos, ok := e.Position()
		assert.True(t, ok)
		assert.Equal(t, Position{0, 7}, pos)
		assert.Equal(t, Key{"aep://s", "i"}, e.Key())
		assert.Equal(t, SessionKey{"aep://s", "s:1 x"}, e.SessionKey())
		assert.True(t, e.SessionScoped())
	})
	t.Run("escaped strings decode", func(t *testing.T) {
		t.Parallel()
		e, err := Decode([]byte(`{"subject":"a\"b\u00e9"}`))
		require.NoError(t, err)
		assert.Equal(t, `a"bé`, e.Subject())
	})
	for name, in := range map[string]string{
		"not JSON":          `{"aep":`,
		"array":             `[1]`,
		"string":            `"x"`,
		"empty":             ``,
		"string seq":        `{"seq":"1"}`,
		"float seq":         `{"seq":1.5}`,
		"number type":       `{"type":3}`,
		"object session":    `{"session":{}}`,
		"two values":        `{} {}`,
		"overflowing seq":   `{"seq":99999999999999999999}`,
		"overflowing epoch": `{"epoch":1e3}`,
	} {
		t.Run("refuses "+name, func(t *testing.T) {
			t.Parallel()
			_, err := Decode([]byte(in))
			assert.Error(t, err, "input %q", in)
		})
	}
	t.Run("wrong attribute type names the attribute", func(t *testing.T) {
		t.Parallel()
		_, err := Decode([]byte(`{"agent":true}`))
		var ve *ValidationError
		require.True(t, errors.As(err, &ve))
		assert.Equal(t, "agent", ve.Attr)
	})
}

func TestBuild(t *testing.T) {
	t.Parallel()
	e, err := Build(Envelope{ID: "c1", Type: "control.attention.respond", Time: "2026-07-03T10:00:00Z", Source: "aep://ui/agent/op", Agent: "op",
		Session: "s1", Subject: "r1", Cause: "r1", Capture: "metadata", Data: Respond{Answer: Answer{Option: "allow"}}})
	require.NoError(t, err)
	assert.Equal(t, `{"aep":"0.1","id":"c1","type":"control.attention.respond","subject":"r1","time":"2026-07-03T10:00:00Z","source":"aep://ui/agent/op","agent":"op","session":"s1","cause":"r1","capture":"metadata","data":{"answer":{"option":"allow"}}}`, string(e.Raw()))
	assert.NoError(t, ValidateEnvelope(e))
	_, hasSeq := e.Seq()
	assert.False(t, hasSeq)

	e, err = Build(Envelope{ID: "e", Type: "run.started", Time: "2026-07-03T10:00:00Z", Source: "aep://a", Agent: "a", Session: "s", Seq: Int64(0), Epoch: Int64(0)})
	require.NoError(t, err)
	assert.Contains(t, string(e.Raw()), `"seq":0,"epoch":0`, "zero seq and epoch are written")
	assert.NoError(t, ValidateEnvelope(e))
}

func TestSSEID(t *testing.T) {
	t.Parallel()
	cases := []struct {
		session string
		pos     Position
		id      string
	}{
		{"s_8f2c", Position{0, 20}, "s_8f2c:0:20"},
		{"a:b:c", Position{3, 4}, "a:b:c:3:4"},
		{"with space: and colon", Position{1, 0}, "with space: and colon:1:0"},
		{"9:9", Position{9, 9}, "9:9:9:9"},
		{"é", Position{0, 9223372036854775807}, "é:0:9223372036854775807"},
	}
	for _, tc := range cases {
		t.Run(tc.id, func(t *testing.T) {
			t.Parallel()
			assert.Equal(t, tc.id, FormatSSEID(tc.session, tc.pos))
			s, p, err := ParseSSEID(tc.id)
			require.NoError(t, err)
			assert.Equal(t, tc.session, s)
			assert.Equal(t, tc.pos, p)
		})
	}
	for _, bad := range []string{"", "s", "s:1", ":1:2", "s:x:1", "s:1:y", "s:-1:2", "s:1:-2", "s:1:", "s::1", "s:1:2 "} {
		t.Run("bad "+bad, func(t *testing.T) {
			t.Parallel()
			_, _, err := ParseSSEID(bad)
			assert.ErrorIs(t, err, ErrBadSSEID, "id %q", bad)
		})
	}
}

func TestPositionOrder(t *testing.T) {
	t.Parallel()
	ordered := []Position{{0, 0}, {0, 1}, {0, 20}, {1, 0}, {2, 5}}
	for i := range ordered {
		for j := range ordered {
			want := 0
			if i < j {
				want = -1
			} else if i > j {
				want = 1
			}
			assert.Equal(t, want, ordered[i].Compare(ordered[j]), "%v vs %v", ordered[i], ordered[j])
			assert.Equal(t, i < j, ordered[i].Less(ordered[j]))
		}
	}
}
