package conformance

import (
	"context"
	"crypto/rand"
	"encoding/hex"
	"net/http"
	"slices"
	"strings"
	"time"
)

// check is one named conformance check.
type check struct {
	name string
	fn   func(ctx context.Context, r *runner) error
}

// runner is the state one Run shares between its checks.
type runner struct {
	t      Target
	base   string
	prefix string // unique per run: sessions and ids never collide across runs
	hc     *http.Client
	disc   *discovery // the discovery document, once a check has read it
	n      int        // a counter for unique names
}

// Checks lists the names of the relay checks Run performs, in order.
func Checks() []string {
	var out []string
	for _, c := range relayChecks() {
		out = append(out, c.name)
	}
	return out
}

func relayChecks() []check {
	var all []check
	for _, group := range [][]check{httpChecks(), sseChecks(), wsChecks(), controlChecks(), bufferChecks(), downlevelChecks()} {
		all = append(all, group...)
	}
	return all
}

// Run checks the relay t describes and reports every check. It returns
// when every check is done or ctx ends (the remaining checks then fail
// with the context's error).
func Run(ctx context.Context, t Target) Report {
	r := newRunner(t)
	var rep Report
	for _, c := range relayChecks() {
		if len(t.Only) > 0 && !slices.Contains(t.Only, c.name) {
			continue
		}
		rep.Results = append(rep.Results, r.run(ctx, c))
	}
	return rep
}

func newRunner(t Target) *runner {
	if t.CheckTimeout <= 0 {
		t.CheckTimeout = 5 * time.Second
	}
	hc := t.HTTPClient
	if hc == nil {
		hc = &http.Client{}
	}
	return &runner{t: t, base: strings.TrimSuffix(t.BaseURL, "/"), prefix: "cf" + randHex(4), hc: hc}
}

// run runs one check under its deadline; a panic in a check is its failure,
// not the run's end.
func (r *runner) run(ctx context.Context, c check) (res Result) {
	start := time.Now()
	ctx, cancel := context.WithTimeout(ctx, r.t.CheckTimeout)
	defer cancel()
	defer func() {
		if p := recover(); p != nil {
			res = Result{Name: c.name, Status: Fail, Reason: "checker panic: " + strings.TrimSpace(fmtAny(p)), Elapsed: time.Since(start)}
		}
	}()
	err := c.fn(ctx, r)
	return result(c.name, err, time.Since(start))
}

// uniq returns a name unique within the run: {prefix}-{what}-{n}.
func (r *runner) uniq(what string) string {
	r.n++
	return r.prefix + "-" + what + "-" + itoa(r.n)
}

func randHex(n int) string {
	b := make([]byte, n)
	_, _ = rand.Read(b)
	return hex.EncodeToString(b)
}
