package aep

import (
	"encoding/json"
	"fmt"
	"path"
	"sync"

	"github.com/aepforms/aepforms/internal/aep/schemas"
)

// typeEntry is a registered core type's entry in
// schemas/registry/types.json, as far as capture gating needs it.
type typeEntry struct {
	Type   string  `json:"type"`
	Schema *string `json:"schema"` // payload schema file under schemas/types/, null when none
}

// registryList is the registry's core types, in registry order.
var registryList = sync.OnceValue(func() []typeEntry {
	var reg struct {
		Types []typeEntry `json:"types"`
	}
	mustReadSchemaJSON("registry/types.json", &reg)
	return reg.Types
})

// mustReadSchemaJSON decodes an embedded schema file. The files are part of
// the binary, so a failure is a build defect, not a runtime condition.
func mustReadSchemaJSON(name string, v any) {
	b, err := schemas.FS.ReadFile(name)
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
		if ti.Schema == nil || *ti.Schema == "" {
			continue
		}
		var doc map[string]any
		mustReadSchemaJSON(path.Join("types", *ti.Schema), &doc)
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
