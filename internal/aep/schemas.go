package aep

import (
	"embed"
	"encoding/json"
	"fmt"
	"path"
	"sync"
)

// schemaFiles are the AEP 0.1 schemas, vendored byte-identical
// (schemas/PROVENANCE.md).
//
//go:embed schemas/aep-event.schema.json schemas/registry/*.json schemas/types/*.json
var schemaFiles embed.FS

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
	ti, ok := registry()[t]
	return ti, ok
}

// RegisteredTypes lists the registry's core types, in registry order.
func RegisteredTypes() []TypeInfo {
	return append([]TypeInfo(nil), registryList()...)
}

var registryList = sync.OnceValue(func() []TypeInfo {
	var reg struct {
		Types []struct {
			TypeInfo
			Schema *string `json:"schema"`
		} `json:"types"`
	}
	mustReadSchemaJSON("registry/types.json", &reg)
	out := make([]TypeInfo, 0, len(reg.Types))
	for _, t := range reg.Types {
		ti := t.TypeInfo
		ti.Schema = ""
		if t.Schema != nil {
			ti.Schema = *t.Schema
		}
		out = append(out, ti)
	}
	return out
})

var registry = sync.OnceValue(func() map[string]TypeInfo {
	m := make(map[string]TypeInfo)
	for _, ti := range registryList() {
		m[ti.Type] = ti
	}
	return m
})

// mustReadSchemaJSON decodes an embedded schema file. The files are part of
// the binary, so a failure is a build defect, not a runtime condition.
func mustReadSchemaJSON(name string, v any) {
	b, err := schemaFiles.ReadFile(path.Join("schemas", name))
	if err != nil {
		panic(fmt.Sprintf("aep: embedded schema %s: %v", name, err))
	}
	if err := json.Unmarshal(b, v); err != nil {
		panic(fmt.Sprintf("aep: embedded schema %s: %v", name, err))
	}
}

// captureNode is the x-aep-capture annotation tree of a payload schema: the
// minimum level of a field, its object properties and its array items.
// Fields without an annotation are metadata (AEP-0002 §5.1 rule 4).
type captureNode struct {
	level Capture
	props map[string]*captureNode // nil: not an annotated object
	items *captureNode            // nil: not an annotated array
}

// captureTrees maps each registered type with a payload schema to its tree.
var captureTrees = sync.OnceValue(func() map[string]*captureNode {
	out := make(map[string]*captureNode)
	for _, ti := range registryList() {
		if ti.Schema == "" {
			continue
		}
		var doc map[string]any
		mustReadSchemaJSON(path.Join("types", ti.Schema), &doc)
		out[ti.Type] = buildCaptureNode(doc)
	}
	return out
})

func buildCaptureNode(s map[string]any) *captureNode {
	n := &captureNode{level: CaptureMetadata}
	if lvl, ok := s["x-aep-capture"].(string); ok {
		if c, err := ParseCapture(lvl); err == nil {
			n.level = c
		}
	}
	if props, ok := s["properties"].(map[string]any); ok {
		n.props = make(map[string]*captureNode, len(props))
		for k, v := range props {
			if sub, ok := v.(map[string]any); ok {
				n.props[k] = buildCaptureNode(sub)
			}
		}
	}
	if items, ok := s["items"].(map[string]any); ok {
		n.items = buildCaptureNode(items)
	}
	return n
}
