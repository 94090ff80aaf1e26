// Package aep is the Agent Event Protocol 0.1 core shared by every part of
// aepforms: the envelope (Event), typed payloads, validation (envelope,
// payload schemas, stream rules), capture gating, down-levelling, redaction
// and attr-match filters. It does no network I/O.
package aep
