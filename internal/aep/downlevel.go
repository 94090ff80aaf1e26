package aep

import (
	"bytes"
	"encoding/json"
	"fmt"
	"strconv"
)

// Downlevel rewrites e for a consumer whose capture ceiling is below e's
// capture, as a mechanical fan-out hop does (AEP-0001 §8.2, AEP-0002 §5.1,
// NOTES §2). An event at or below the ceiling is returned as is (the same
// *Event, the same bytes): a hop never up-levels.
//
// Otherwise the result's capture is the ceiling, except that a full event
// under a redacted ceiling becomes metadata (a hop cannot mint the redacted
// provenance claim). At none, data goes. Below redacted the payload loses
// every field whose x-aep-capture is above the new level, attention.requested
// degrades structurally (the prompt becomes "{agent} requests {kind}:
// {subject}", option, field and choice labels become their ids), and
// answer.values keeps only number and boolean entries: a hop has no field
// specs, so even closed-select ids go (GateValues is the emitter's finer
// rule). A type without payload annotations (vendor, unknown, schemaless)
// loses its data. Everything else, extension attributes included, keeps
// its place and bytes.
func Downlevel(e *Event, ceiling Capture) (*Event, error) {
	if ceiling < CaptureNone || ceiling > CaptureFull {
		return nil, fmt.Errorf("aep: downlevel: unknown capture ceiling %d", int(ceiling))
	}
	src := e.Capture()
	if ceiling >= src {
		return e, nil
	}
	target := ceiling
	if ceiling == CaptureRedacted && src == CaptureFull {
		target = CaptureMetadata
	}
	ms := e.members
	data, keep, err := downlevelData(e, target)
	if err != nil {
		return nil, fmt.Errorf("aep: downlevel %s: %w", e.id, err)
	}
	captureVal, _ := json.Marshal(target.String())
	out := make([]member, 0, len(ms)+1)
	wroteCapture := false
	for _, m := range ms {
		switch m.Key {
		case "capture":
			m.Value = captureVal
			wroteCapture = true
		case "data":
			if !keep {
				continue
			}
			if !wroteCapture {
				out = append(out, member{Key: "capture", Value: captureVal})
				wroteCapture = true
			}
			m.Value = data
		}
		out = append(out, m)
	}
	if !wroteCapture {
		out = append(out, member{Key: "capture", Value: captureVal})
	}
	return Decode(encodeObject(out))
}

// downlevelData returns the payload at level target and whether to keep it.
func downlevelData(e *Event, target Capture) (json.RawMessage, bool, error) {
	data, ok := e.coreMember(coreData)
	if !ok || target == CaptureNone {
		return nil, false, nil
	}
	tree := captureTrees()[e.typ]
	if tree == nil {
		return nil, false, nil
	}
	data, err := prune(data, tree, target)
	if err != nil {
		return nil, false, err
	}
	if target < CaptureRedacted {
		switch e.typ {
		case "attention.requested":
			data, err = degradeRequest(data, e.agent, e.subject)
		case "attention.answered", "control.attention.respond":
			data, err = editMember(data, "answer", func(a json.RawMessage) (json.RawMessage, error) {
				return editMember(a, "values", structuralValues)
			})
		}
	}
	return data, err == nil, err
}

// prune drops every member annotated above target, recursing through
// annotated objects and arrays; unannotated content stays as it is.
func prune(raw json.RawMessage, n *captureNode, target Capture) (json.RawMessage, error) {
	switch jsonKind(raw) {
	case '{':
		if n.props == nil {
			return raw, nil
		}
		ms, err := objectMembers(raw)
		if err != nil {
			return nil, err
		}
		kept := ms[:0]
		for _, m := range ms {
			child := n.props[m.Key]
			if child == nil {
				kept = append(kept, m)
				continue
			}
			if child.level > target {
				continue
			}
			if m.Value, err = prune(m.Value, child, target); err != nil {
				return nil, err
			}
			kept = append(kept, m)
		}
		return encodeObject(kept), nil
	case '[':
		if n.items == nil {
			return raw, nil
		}
		return mapArray(raw, func(_ int, el json.RawMessage) (json.RawMessage, error) {
			return prune(el, n.items, target)
		})
	}
	return raw, nil
}

// degradeRequest replaces the [metadata*] fields of attention.requested with
// structural placeholders: a synthesized prompt and labels equal to ids.
func degradeRequest(data json.RawMessage, agent, subject string) (json.RawMessage, error) {
	ms, err := objectMembers(data)
	if err != nil {
		return nil, err
	}
	kind := "attention"
	for _, m := range ms {
		if m.Key == "kind" {
			if s, err := rawString(m.Value); err == nil && s != "" {
				kind = s
			}
		}
	}
	prompt := agent + " requests " + kind
	if subject != "" {
		prompt += ": " + subject
	}
	labelsToIDs := func(arr json.RawMessage, nested string) (json.RawMessage, error) {
		return mapArray(arr, func(i int, el json.RawMessage) (json.RawMessage, error) {
			return labelToID(el, i, nested)
		})
	}
	for i, m := range ms {
		switch m.Key {
		case "prompt":
			ms[i].Value, _ = json.Marshal(prompt)
		case "options":
			ms[i].Value, err = labelsToIDs(m.Value, "")
		case "fields":
			ms[i].Value, err = labelsToIDs(m.Value, "choices")
		}
		if err != nil {
			return nil, err
		}
	}
	return encodeObject(ms), nil
}

// labelToID sets an element's label to its id (or, lacking one, its 1-based
// index), and does the same inside its nested array member when named.
func labelToID(el json.RawMessage, i int, nested string) (json.RawMessage, error) {
	if jsonKind(el) != '{' {
		return el, nil
	}
	ms, err := objectMembers(el)
	if err != nil {
		return nil, err
	}
	placeholder, _ := json.Marshal(strconv.Itoa(i + 1))
	for _, m := range ms {
		if m.Key == "id" && jsonKind(m.Value) == '"' {
			placeholder = m.Value
		}
	}
	for j, m := range ms {
		switch {
		case m.Key == "label":
			ms[j].Value = placeholder
		case nested != "" && m.Key == nested && jsonKind(m.Value) == '[':
			ms[j].Value, err = mapArray(m.Value, func(k int, c json.RawMessage) (json.RawMessage, error) {
				return labelToID(c, k, "")
			})
			if err != nil {
				return nil, err
			}
		}
	}
	return encodeObject(ms), nil
}

// structuralValues keeps the number and boolean entries of a values map.
func structuralValues(v json.RawMessage) (json.RawMessage, error) {
	if jsonKind(v) != '{' {
		return v, nil
	}
	ms, err := objectMembers(v)
	if err != nil {
		return nil, err
	}
	kept := ms[:0]
	for _, m := range ms {
		if k := jsonKind(m.Value); k == '0' || k == 't' {
			kept = append(kept, m)
		}
	}
	return encodeObject(kept), nil
}

// editMember applies fn to the named member of an object, when present.
func editMember(obj json.RawMessage, name string, fn func(json.RawMessage) (json.RawMessage, error)) (json.RawMessage, error) {
	if jsonKind(obj) != '{' {
		return obj, nil
	}
	ms, err := objectMembers(obj)
	if err != nil {
		return nil, err
	}
	for i, m := range ms {
		if m.Key == name {
			if ms[i].Value, err = fn(m.Value); err != nil {
				return nil, err
			}
		}
	}
	return encodeObject(ms), nil
}

// mapArray applies fn to every element of a JSON array.
func mapArray(arr json.RawMessage, fn func(int, json.RawMessage) (json.RawMessage, error)) (json.RawMessage, error) {
	els, err := arrayElements(arr)
	if err != nil {
		return nil, err
	}
	var buf bytes.Buffer
	buf.WriteByte('[')
	for i, el := range els {
		v, err := fn(i, el)
		if err != nil {
			return nil, err
		}
		if i > 0 {
			buf.WriteByte(',')
		}
		buf.Write(v)
	}
	buf.WriteByte(']')
	return buf.Bytes(), nil
}
