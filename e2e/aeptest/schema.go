package aeptest

import (
	"bytes"
	"encoding/json"
	"errors"
	"fmt"
	"path"
	"strconv"
	"strings"
	"sync"

	"github.com/santhosh-tekuri/jsonschema/v6"

	"github.com/aepforms/aepforms/internal/aep"
	"github.com/aepforms/aepforms/internal/aep/schemas"
)

// ValidateEvent is aep.ValidateEnvelope and ValidatePayload together: every
// failure of either, joined.
func ValidateEvent(e *aep.Event) error {
	return errors.Join(aep.ValidateEnvelope(e), ValidatePayload(e))
}

// ValidatePayload checks e's data against the payload schema of its type
// (schemas/types, draft 2020-12, formats asserted). Vendor types, unknown
// types and registered types without a schema pass, and so does an event
// without data (capture none carries none). Each failure is an
// *aep.ValidationError whose Attr is the JSON path in data
// ("data.fields[0]") and whose Rule is the schema's complaint; several are
// joined (errors.Join).
func ValidatePayload(e *aep.Event) error {
	data, ok := e.Member("data")
	if !ok {
		return nil
	}
	sch, err := payloadSchema(e.Type())
	if err != nil || sch == nil {
		return err
	}
	inst, err := jsonschema.UnmarshalJSON(bytes.NewReader(data))
	if err != nil {
		return &aep.ValidationError{Attr: "data", Rule: "must be valid JSON"}
	}
	verr := sch.Validate(inst)
	if verr == nil {
		return nil
	}
	var ve *jsonschema.ValidationError
	if !errors.As(verr, &ve) {
		return &aep.ValidationError{Attr: "data", Rule: verr.Error()}
	}
	var errs []error
	for _, u := range ve.BasicOutput().Errors {
		if u.Error != nil && len(u.Errors) == 0 {
			errs = append(errs, &aep.ValidationError{Attr: dataPath(u.InstanceLocation), Rule: u.Error.String()})
		}
	}
	if len(errs) == 0 {
		errs = append(errs, &aep.ValidationError{Attr: "data", Rule: ve.Error()})
	}
	return errors.Join(errs...)
}

// dataPath renders a JSON pointer into data as data.a.b[0].
func dataPath(ptr string) string {
	var b strings.Builder
	b.WriteString("data")
	if ptr == "" {
		return b.String()
	}
	for _, tok := range strings.Split(strings.TrimPrefix(ptr, "/"), "/") {
		tok = strings.ReplaceAll(strings.ReplaceAll(tok, "~1", "/"), "~0", "~")
		if _, err := strconv.Atoi(tok); err == nil {
			b.WriteString("[" + tok + "]")
			continue
		}
		b.WriteString("." + tok)
	}
	return b.String()
}

// TypeInfo is a registered core type's entry in schemas/registry/types.json.
type TypeInfo struct {
	Type    string `json:"type"`
	Status  string `json:"status"` // mandatory | optional | reserved
	Scope   string `json:"scope"`  // session | agent | command
	Schema  string `json:"schema"` // payload schema file under schemas/types/, "" when none
	Summary string `json:"summary"`
}

// LookupType returns the registry entry of a core type; vendor and unknown
// types are not registered.
func LookupType(t string) (TypeInfo, bool) {
	reg, err := registry()
	if err != nil {
		return TypeInfo{}, false
	}
	for _, ti := range reg {
		if ti.Type == t {
			return ti, true
		}
	}
	return TypeInfo{}, false
}

// RegisteredTypes lists the registry's core types, in registry order; nil
// when the embedded registry cannot be read (a build defect).
func RegisteredTypes() []TypeInfo {
	reg, err := registry()
	if err != nil {
		return nil
	}
	return append([]TypeInfo(nil), reg...)
}

// registry reads schemas/registry/types.json once.
var registry = sync.OnceValues(func() ([]TypeInfo, error) {
	b, err := schemas.FS.ReadFile("registry/types.json")
	if err != nil {
		return nil, fmt.Errorf("aeptest: embedded registry: %w", err)
	}
	var reg struct {
		Types []struct {
			TypeInfo
			Schema *string `json:"schema"`
		} `json:"types"`
	}
	if err := json.Unmarshal(b, &reg); err != nil {
		return nil, fmt.Errorf("aeptest: embedded registry: %w", err)
	}
	out := make([]TypeInfo, 0, len(reg.Types))
	for _, t := range reg.Types {
		ti := t.TypeInfo
		ti.Schema = ""
		if t.Schema != nil {
			ti.Schema = *t.Schema
		}
		out = append(out, ti)
	}
	return out, nil
})

// payloadSchema returns the compiled schema for type t, nil when t has none.
func payloadSchema(t string) (*jsonschema.Schema, error) {
	ti, ok := LookupType(t)
	if !ok || ti.Schema == "" {
		return nil, nil
	}
	all, err := compiledSchemas()
	if err != nil {
		return nil, err
	}
	return all[t], nil
}

// compiledSchemas compiles every payload schema once, on first use; the
// compiled schemas are read-only and safe for concurrent validation.
var compiledSchemas = sync.OnceValues(func() (map[string]*jsonschema.Schema, error) {
	reg, err := registry()
	if err != nil {
		return nil, err
	}
	c := jsonschema.NewCompiler()
	c.DefaultDraft(jsonschema.Draft2020)
	c.AssertFormat()
	out := make(map[string]*jsonschema.Schema)
	for _, ti := range reg {
		if ti.Schema == "" {
			continue
		}
		name := path.Join("types", ti.Schema)
		b, err := schemas.FS.ReadFile(name)
		if err != nil {
			return nil, fmt.Errorf("aeptest: embedded schema %s: %w", name, err)
		}
		doc, err := jsonschema.UnmarshalJSON(bytes.NewReader(b))
		if err != nil {
			return nil, fmt.Errorf("aeptest: embedded schema %s: %w", name, err)
		}
		url := "aep://schemas/0.1/types/" + ti.Schema
		if err := c.AddResource(url, doc); err != nil {
			return nil, fmt.Errorf("aeptest: embedded schema %s: %w", name, err)
		}
		sch, err := c.Compile(url)
		if err != nil {
			return nil, fmt.Errorf("aeptest: compile schema %s: %w", name, err)
		}
		out[ti.Type] = sch
	}
	return out, nil
})
