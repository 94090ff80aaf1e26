package conformance

import (
	"errors"
	"fmt"
	"testing"

	"github.com/stretchr/testify/assert"
)

func TestResult(t *testing.T) {
	t.Parallel()
	cases := []struct {
		err    error
		status Status
		reason string
	}{
		{nil, Pass, ""},
		{passf("observed %d", 3), Pass, "observed 3"},
		{skipf("no %s", "token"), Skip, "no token"},
		{fmt.Errorf("wrapped: %w", skipf("inner")), Skip, "inner"},
		{errors.New("got 200, want 400"), Fail, "got 200, want 400"},
	}
	for _, c := range cases {
		got := result("x", c.err, 0)
		assert.Equal(t, c.status, got.Status, "status of %v", c.err)
		assert.Equal(t, c.reason, got.Reason, "reason of %v", c.err)
	}
}

func TestReport(t *testing.T) {
	t.Parallel()
	rep := Report{Results: []Result{{Name: "a", Status: Pass}, {Name: "b", Status: Fail, Reason: "got x, want y"}, {Name: "c", Status: Skip, Reason: "why"}}}
	assert.Len(t, rep.Passed(), 1)
	assert.Equal(t, "b", rep.Failed()[0].Name)
	assert.Equal(t, "c", rep.Skipped()[0].Name)
	r, ok := rep.Result("b")
	assert.True(t, ok)
	assert.Equal(t, Fail, r.Status)
	_, ok = rep.Result("nope")
	assert.False(t, ok)
	assert.Contains(t, rep.String(), "got x, want y")
	assert.Contains(t, rep.String(), "1 passed, 1 failed, 1 skipped")
}

func TestJSONEqual(t *testing.T) {
	t.Parallel()
	assert.True(t, jsonEqual([]byte(`{"a":1,"b":[true,"x"]}`), []byte(`{ "b":[true,"x"], "a":1.0 }`)))
	assert.False(t, jsonEqual([]byte(`{"a":1}`), []byte(`{"a":"1"}`)), "no coercion")
	assert.False(t, jsonEqual([]byte(`{"a":1}`), []byte(`{"a":1} x`)), "trailing data")
}
