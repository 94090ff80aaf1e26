// Package schemas holds the AEP 0.1 JSON Schemas, vendored byte-identical
// (PROVENANCE.md), as an embedded file system: the envelope schema, the
// registries and the payload schemas of the core types. internal/aep reads
// the payload schemas' x-aep-capture annotations for capture gating; the
// tests' payload validation (e2e/aeptest) compiles them.
package schemas

import "embed"

// FS holds aep-event.schema.json, registry/*.json and types/*.json, at
// those paths. It is read-only.
//
//go:embed aep-event.schema.json registry/*.json types/*.json
var FS embed.FS
