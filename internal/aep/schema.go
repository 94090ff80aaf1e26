package aep

import (
	"bytes"
	"errors"
	"fmt"
	"path"
	"strconv"
	"strings"
	"sync"

	"github.com/santhosh-tekuri/jsonschema/v6"
)

// ValidatePayload checks e's data against the payload schema of its type
// (schemas/types, draft 2020-12, formats asserted). Vendor types, unknown
// types and registered types without a schema pass, and so does an event
// without data (capture none carries none). Each failure is a
// *ValidationError whose Attr is the JSON path in data
// ("data.fields[0]") and whose Rule is the schema's complaint; several are
// joined (errors.Join).
func ValidatePayload(e *Event) error {
	data, ok := e.coreMember(coreData)
	if !ok {
		return nil
	}
	sch, err := payloadSchema(e.typ)
	if err != nil || sch == nil {
		return err
	}
	inst, err := jsonschema.UnmarshalJSON(bytes.NewReader(data))
	if err != nil {
		return &ValidationError{Attr: "data", Rule: "must be valid JSON"}
	}
	verr := sch.Validate(inst)
	if verr == nil {
		return nil
	}
	var ve *jsonschema.ValidationError
	if !errors.As(verr, &ve) {
		return &ValidationError{Attr: "data", Rule: verr.Error()}
	}
	var c collector
	for _, u := range ve.BasicOutput().Errors {
		if u.Error != nil && len(u.Errors) == 0 {
			c.add(dataPath(u.InstanceLocation), u.Error.String())
		}
	}
	if len(c.errs) == 0 {
		c.add("data", ve.Error())
	}
	return c.err()
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
	c := jsonschema.NewCompiler()
	c.DefaultDraft(jsonschema.Draft2020)
	c.AssertFormat()
	out := make(map[string]*jsonschema.Schema)
	for _, ti := range registryList() {
		if ti.Schema == "" {
			continue
		}
		name := path.Join("schemas", "types", ti.Schema)
		b, err := schemaFiles.ReadFile(name)
		if err != nil {
			return nil, fmt.Errorf("aep: embedded schema %s: %w", name, err)
		}
		doc, err := jsonschema.UnmarshalJSON(bytes.NewReader(b))
		if err != nil {
			return nil, fmt.Errorf("aep: embedded schema %s: %w", name, err)
		}
		url := "aep://schemas/0.1/types/" + ti.Schema
		if err := c.AddResource(url, doc); err != nil {
			return nil, fmt.Errorf("aep: embedded schema %s: %w", name, err)
		}
		sch, err := c.Compile(url)
		if err != nil {
			return nil, fmt.Errorf("aep: compile schema %s: %w", name, err)
		}
		out[ti.Type] = sch
	}
	return out, nil
})
