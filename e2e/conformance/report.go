package conformance

import (
	"errors"
	"fmt"
	"strings"
	"time"
)

// Status is a check's outcome.
type Status string

// Outcomes of a check.
const (
	Pass Status = "pass"
	Fail Status = "fail"
	Skip Status = "skip"
)

// Result is one check's outcome. Reason says, for a failure, what was got
// and what was wanted; for a skip, why the check could not run; for a pass,
// optionally what was observed.
type Result struct {
	Name    string
	Status  Status
	Reason  string
	Elapsed time.Duration
}

// Report is the outcome of a run: one Result per check, in run order.
type Report struct {
	Results []Result
}

// Failed returns the failing results.
func (r Report) Failed() []Result { return r.with(Fail) }

// Skipped returns the skipped results.
func (r Report) Skipped() []Result { return r.with(Skip) }

// Passed returns the passing results.
func (r Report) Passed() []Result { return r.with(Pass) }

func (r Report) with(s Status) []Result {
	var out []Result
	for _, res := range r.Results {
		if res.Status == s {
			out = append(out, res)
		}
	}
	return out
}

// Result returns the result of the check named name.
func (r Report) Result(name string) (Result, bool) {
	for _, res := range r.Results {
		if res.Name == name {
			return res, true
		}
	}
	return Result{}, false
}

// String renders the report one check per line, then a summary line.
func (r Report) String() string {
	var b strings.Builder
	for _, res := range r.Results {
		fmt.Fprintf(&b, "%-4s %-44s %6.0fms", res.Status, res.Name, float64(res.Elapsed.Microseconds())/1000)
		if res.Reason != "" {
			fmt.Fprintf(&b, "  %s", res.Reason)
		}
		b.WriteByte('\n')
	}
	fmt.Fprintf(&b, "%d passed, %d failed, %d skipped\n", len(r.Passed()), len(r.Failed()), len(r.Skipped()))
	return b.String()
}

// skipError marks a check that could not run against this set-up.
type skipError struct{ reason string }

func (e *skipError) Error() string { return e.reason }

// skipf returns the error a check returns to report itself skipped.
func skipf(format string, args ...any) error {
	return &skipError{reason: fmt.Sprintf(format, args...)}
}

// passNote is returned by a check that passed and has something worth
// reporting about what it observed (a documented choice the spec leaves
// open, for instance).
type passNote struct{ note string }

func (e *passNote) Error() string { return e.note }

func passf(format string, args ...any) error {
	return &passNote{note: fmt.Sprintf(format, args...)}
}

// result turns a check's returned error into its Result.
func result(name string, err error, elapsed time.Duration) Result {
	res := Result{Name: name, Status: Pass, Elapsed: elapsed}
	var se *skipError
	var pn *passNote
	switch {
	case err == nil:
	case errors.As(err, &se):
		res.Status, res.Reason = Skip, se.reason
	case errors.As(err, &pn):
		res.Reason = pn.note
	default:
		res.Status, res.Reason = Fail, err.Error()
	}
	return res
}
