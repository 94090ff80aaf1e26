package relay

import (
	"encoding/json"
	"net/http"
	"time"

	"github.com/aepforms/aepforms/internal/aep"
)

// capabilities is the relay's capability block, shared by the discovery
// document and its hello frame. It advertises exactly what is implemented.
type capabilities struct {
	Filters []string       `json:"filters"`
	Replay  replayCaps     `json:"replay"`
	Capture []string       `json:"capture"`
	Control controlCaps    `json:"control"`
	Roster  map[string]any `json:"roster"`
}

type replayCaps struct {
	Buffer int  `json:"buffer"`
	All    bool `json:"all"`
}

// controlCaps: the relay itself executes no command (accepts is empty);
// advertising the block says it routes them (AEP-0004 §4).
type controlCaps struct {
	Accepts []string `json:"accepts"`
}

func (r *Relay) capabilities() capabilities {
	return capabilities{
		Filters: []string{"attr-match"},
		Replay:  replayCaps{Buffer: r.cfg.Buffer, All: true},
		Capture: []string{aep.CaptureNone.String(), aep.CaptureMetadata.String(), aep.CaptureRedacted.String(), aep.CaptureFull.String()},
		Control: controlCaps{Accepts: []string{}},
		Roster:  map[string]any{},
	}
}

type discovery struct {
	AEP          []string          `json:"aep"`
	Role         string            `json:"role"`
	Endpoints    map[string]string `json:"endpoints"`
	Capabilities capabilities      `json:"capabilities"`
}

// handleDiscovery serves the discovery document (AEP-0003 §3.4) on GET
// /events and /.well-known/aep.
func (r *Relay) handleDiscovery(w http.ResponseWriter, _ *http.Request) {
	writeJSON(w, http.StatusOK, discovery{
		AEP:          []string{aep.Version},
		Role:         "relay",
		Endpoints:    map[string]string{"events": "/events", "stream": "/stream", "socket": "/socket"},
		Capabilities: r.capabilities(),
	})
}

type healthz struct {
	OK bool `json:"ok"`
	*Stats
	UptimeS *int64 `json:"uptime_s,omitempty"`
}

// handleHealthz answers {"ok":true} to anyone and adds the counts and the
// uptime in seconds for an authorized request (counts are topology).
func (r *Relay) handleHealthz(w http.ResponseWriter, req *http.Request) {
	h := healthz{OK: true}
	if r.authorized(req) {
		st := r.Stats()
		up := int64(r.cfg.Now().Sub(r.started) / time.Second)
		h.Stats, h.UptimeS = &st, &up
	}
	writeJSON(w, http.StatusOK, h)
}

// errorBody is every refusal's JSON body.
type errorBody struct {
	Error    string   `json:"error"`
	Detail   string   `json:"detail,omitempty"`
	Line     int      `json:"line,omitempty"` // 1-based line of a batch
	Index    *int     `json:"index,omitempty"`
	Versions []string `json:"versions,omitempty"`
}

func writeJSON(w http.ResponseWriter, status int, v any) {
	b, err := json.Marshal(v)
	if err != nil {
		http.Error(w, `{"error":"internal"}`, http.StatusInternalServerError)
		return
	}
	w.Header().Set("Content-Type", "application/json")
	w.Header().Set("Cache-Control", "no-store")
	w.WriteHeader(status)
	_, _ = w.Write(append(b, '\n'))
}
