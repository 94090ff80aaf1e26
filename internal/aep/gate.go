package aep

// GateValues returns the answer.values an emitter may publish in an event
// whose capture is ceiling (AEP-0006 values gating, fixtures/capture-gating).
// The rule is type-dependent and needs the field specs: number and boolean
// values and closed choice ids are structural and kept at every level; a
// string field's value and Other text on a select are user-authored text,
// kept only at redacted and full. Keys no field declares are dropped, and so
// is a value whose shape does not fit its field (it may hold text).
//
// At exactly redacted, kept text passes the redaction pipeline (Redact), since
// capture redacted claims it did; at full it is verbatim. At none the
// structural values still come back: dropping data at none is the caller's
// job (Downlevel does it for a hop). The result is a new map, never nil.
func GateValues(fields []FieldSpec, v Values, ceiling Capture) Values {
	out := make(Values, len(v))
	for k, val := range v {
		f := fieldByID(fields, k)
		if f == nil {
			continue
		}
		if structural(f, val) {
			out[k] = copyValue(val)
			continue
		}
		if ceiling < CaptureRedacted {
			continue
		}
		if ceiling == CaptureRedacted {
			out[k] = redactText(f, val)
		} else {
			out[k] = copyValue(val)
		}
	}
	return out
}

// structural reports whether val, answering f, holds no user-authored text.
func structural(f *FieldSpec, val any) bool {
	switch f.Type {
	case FieldNumber:
		_, ok := numberOf(val)
		return ok
	case FieldBoolean:
		_, ok := val.(bool)
		return ok
	case FieldSelect:
		if s, ok := val.(string); ok {
			return f.HasChoice(s)
		}
		list, ok := stringList(val)
		if !ok {
			return false
		}
		for _, s := range list {
			if !f.HasChoice(s) {
				return false
			}
		}
		return true
	}
	return false
}

// redactText passes the text in val through Redact, leaving choice ids of a
// select as they are.
func redactText(f *FieldSpec, val any) any {
	keep := func(s string) string {
		if f.Type == FieldSelect && f.HasChoice(s) {
			return s
		}
		return Redact(s)
	}
	switch x := val.(type) {
	case string:
		return keep(x)
	case []any:
		out := make([]any, len(x))
		for i, el := range x {
			if s, ok := el.(string); ok {
				out[i] = keep(s)
			} else {
				out[i] = RedactValue(el)
			}
		}
		return out
	case []string:
		out := make([]string, len(x))
		for i, s := range x {
			out[i] = keep(s)
		}
		return out
	}
	return RedactValue(val)
}

// copyValue copies lists so the result shares no slice with the input.
func copyValue(v any) any {
	switch x := v.(type) {
	case []any:
		return append([]any(nil), x...)
	case []string:
		return append([]string(nil), x...)
	}
	return v
}
