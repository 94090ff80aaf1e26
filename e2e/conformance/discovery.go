package conformance

import (
	"context"
	"encoding/json"
	"fmt"
	"mime"
	"net/http"
	"slices"
)

// discovery is the discovery document (AEP-0003 §3.4).
type discovery struct {
	AEP          []string          `json:"aep"`
	Role         string            `json:"role"`
	Endpoints    map[string]string `json:"endpoints"`
	Capabilities struct {
		Filters []string `json:"filters"`
		Replay  *struct {
			Buffer *int  `json:"buffer"`
			All    *bool `json:"all"`
		} `json:"replay"`
		Capture []string        `json:"capture"`
		Control json.RawMessage `json:"control"`
		Roster  json.RawMessage `json:"roster"`
	} `json:"capabilities"`
	raw []byte
}

// fetchDiscovery GETs path and decodes the document.
func (r *runner) fetchDiscovery(ctx context.Context, path string) (*discovery, error) {
	res, err := r.do(ctx, req{path: path})
	if err != nil {
		return nil, err
	}
	if res.status != http.StatusOK {
		return nil, fmt.Errorf("GET %s: got %d %s, want 200", path, res.status, clip(res.body))
	}
	if mt, _, _ := mime.ParseMediaType(res.header.Get("Content-Type")); mt != "application/json" {
		return nil, fmt.Errorf("GET %s: Content-Type got %q, want application/json", path, res.header.Get("Content-Type"))
	}
	var d discovery
	if err := json.Unmarshal(res.body, &d); err != nil {
		return nil, fmt.Errorf("GET %s: body is not a discovery document: %v: %s", path, err, clip(res.body))
	}
	d.raw = res.body
	return &d, nil
}

// validate checks the document's shape against what the target's operator
// configured.
func (d *discovery) validate(t Target) error {
	if !slices.Contains(d.AEP, "0.1") {
		return fmt.Errorf("aep: got %v, want it to list \"0.1\"", d.AEP)
	}
	for _, ep := range []string{"events", "stream", "socket"} {
		if d.Endpoints[ep] == "" {
			return fmt.Errorf("endpoints.%s: got %q, want the path (this endpoint serves it)", ep, d.Endpoints[ep])
		}
	}
	c := d.Capabilities
	if !slices.Contains(c.Filters, "attr-match") {
		return fmt.Errorf("capabilities.filters: got %v, want it to list attr-match (REQUIRED dialect, AEP-0003 §6)", c.Filters)
	}
	if c.Replay == nil || c.Replay.Buffer == nil {
		return fmt.Errorf("capabilities.replay.buffer: absent, want %d (a buffering endpoint MUST advertise its depth, AEP-0003 §5)", t.Buffer)
	}
	if *c.Replay.Buffer != t.Buffer {
		return fmt.Errorf("capabilities.replay.buffer: got %d, want the configured %d", *c.Replay.Buffer, t.Buffer)
	}
	if c.Replay.All == nil || !*c.Replay.All {
		return fmt.Errorf("capabilities.replay.all: got %v, want true (the relay implements from=all)", c.Replay.All)
	}
	for _, lvl := range []string{"none", "metadata", "redacted"} {
		if !slices.Contains(c.Capture, lvl) {
			return fmt.Errorf("capabilities.capture: got %v, want it to list %s (ceilings the relay down-levels to)", c.Capture, lvl)
		}
	}
	if len(c.Control) == 0 || c.Control[0] != '{' {
		return fmt.Errorf("capabilities.control: got %s, want an object (the relay routes control)", c.Control)
	}
	if len(c.Roster) == 0 || c.Roster[0] != '{' {
		return fmt.Errorf("capabilities.roster: got %s, want {} (the relay answers roster frames)", c.Roster)
	}
	return nil
}

// discover returns the discovery document, fetching it once per run.
func (r *runner) discover(ctx context.Context) (*discovery, error) {
	if r.disc != nil {
		return r.disc, nil
	}
	d, err := r.fetchDiscovery(ctx, "/events")
	if err != nil {
		return nil, err
	}
	r.disc = d
	return d, nil
}

// rosterAdvertised reports whether the endpoint declared roster; a consumer
// must not expect an answer otherwise (AEP-0003 §4.1 rule 1).
func (r *runner) rosterAdvertised(ctx context.Context) error {
	d, err := r.discover(ctx)
	if err != nil {
		return skipf("discovery unreadable (%v): roster not known to be advertised", err)
	}
	if len(d.Capabilities.Roster) == 0 || d.Capabilities.Roster[0] != '{' {
		return skipf("roster not advertised in discovery: a consumer must not expect an answer")
	}
	return nil
}
