// Package aeptest checks AEP events the way the spec's conformance
// fixtures do, for tests: payload validation against the vendored JSON
// Schemas (ValidatePayload, ValidateEvent) and the rules that span the
// events of one stream (StreamChecker). The program itself never needs
// them: the relay checks envelopes only (aep.ValidateEnvelope) and the UI
// checks answers with aep.ValidateValues. Tests of any package but
// internal/aep's own may import it.
package aeptest
