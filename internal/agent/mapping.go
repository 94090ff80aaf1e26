package agent

import (
	"bytes"
	"encoding/json"
	"fmt"
	"strconv"

	"github.com/aepforms/aepforms/internal/aep"
)

// This file maps two vendor shapes onto AEP-0006 forms the way the
// reference Claude Code adapter does (testdata/aep/fixtures/mappings/claude-code.json):
// AskUserQuestion (one form per call, 1-based index ids, every field
// required with other) and MCP elicitation/create (schema keys as field
// ids, enum values as choice ids, closed selects).

// askUserQuestion is the input of Claude Code's AskUserQuestion tool.
type askUserQuestion struct {
	Questions []question `json:"questions"`
}

type question struct {
	Question    string           `json:"question"`
	Header      string           `json:"header"`
	MultiSelect bool             `json:"multiSelect"`
	Options     []questionOption `json:"options"`
}

type questionOption struct {
	Label       string `json:"label"`
	Description string `json:"description,omitempty"`
}

// mapAskUserQuestion maps one AskUserQuestion call to one form request with
// full content. Its prompt ("{agent} asks N questions") is structural, so it
// is also the metadata prompt; labels degrade to the index ids at metadata.
func mapAskUserQuestion(agent string, in askUserQuestion) aep.Request {
	fields := make([]aep.FieldSpec, 0, len(in.Questions))
	for i, q := range in.Questions {
		choices := make([]aep.Choice, 0, len(q.Options))
		for j, o := range q.Options {
			choices = append(choices, aep.Choice{ID: strconv.Itoa(j + 1), Label: o.Label})
		}
		label := q.Question
		if q.Header != "" {
			label = q.Header + ": " + q.Question
		}
		fields = append(fields, aep.FieldSpec{
			ID:       strconv.Itoa(i + 1),
			Type:     aep.FieldSelect,
			Label:    label,
			Required: true,
			Multi:    q.MultiSelect,
			Other:    true,
			Choices:  choices,
		})
	}
	noun := "questions"
	if len(in.Questions) == 1 {
		noun = "question"
	}
	return aep.Request{
		Kind:       aep.KindForm,
		Prompt:     fmt.Sprintf("%s asks %d %s", agent, len(in.Questions), noun),
		Fields:     fields,
		RespondVia: []string{aep.ViaControl},
	}
}

// elicitation is an MCP elicitation/create request: a message and a flat
// requested schema whose property order is kept (it is the form's order).
type elicitation struct {
	Message    string
	Properties []elicitProperty
	Required   []string
}

type elicitProperty struct {
	Key       string
	Type      string   `json:"type"`
	Title     string   `json:"title"`
	Enum      []string `json:"enum"`
	EnumNames []string `json:"enumNames"`
	Minimum   *float64 `json:"minimum"`
	Maximum   *float64 `json:"maximum"`
}

// parseElicitation decodes {message, requestedSchema:{properties, required}}
// keeping the properties in document order.
func parseElicitation(b []byte) (elicitation, error) {
	var raw struct {
		Message         string `json:"message"`
		RequestedSchema struct {
			Properties json.RawMessage `json:"properties"`
			Required   []string        `json:"required"`
		} `json:"requestedSchema"`
	}
	if err := json.Unmarshal(b, &raw); err != nil {
		return elicitation{}, fmt.Errorf("agent: elicitation: %w", err)
	}
	out := elicitation{Message: raw.Message, Required: raw.RequestedSchema.Required}
	if len(raw.RequestedSchema.Properties) == 0 {
		return out, nil
	}
	dec := json.NewDecoder(bytes.NewReader(raw.RequestedSchema.Properties))
	if t, err := dec.Token(); err != nil || t != json.Delim('{') {
		return elicitation{}, fmt.Errorf("agent: elicitation: properties is not an object")
	}
	for dec.More() {
		t, err := dec.Token()
		if err != nil {
			return elicitation{}, fmt.Errorf("agent: elicitation: %w", err)
		}
		key, _ := t.(string)
		var p elicitProperty
		if err := dec.Decode(&p); err != nil {
			return elicitation{}, fmt.Errorf("agent: elicitation property %q: %w", key, err)
		}
		p.Key = key
		out.Properties = append(out.Properties, p)
	}
	return out, nil
}

// mapElicitation maps an elicitation to a form with full content, and
// returns the metadata prompt ("{agent} requests input (N fields)"): the
// message is server-authored content.
func mapElicitation(agent string, in elicitation) (aep.Request, string) {
	required := make(map[string]bool, len(in.Required))
	for _, k := range in.Required {
		required[k] = true
	}
	fields := make([]aep.FieldSpec, 0, len(in.Properties))
	for _, p := range in.Properties {
		f := aep.FieldSpec{ID: p.Key, Label: p.Title, Required: required[p.Key]}
		if f.Label == "" {
			f.Label = p.Key
		}
		switch {
		case len(p.Enum) > 0:
			f.Type = aep.FieldSelect
			for i, v := range p.Enum {
				label := v
				if i < len(p.EnumNames) && p.EnumNames[i] != "" {
					label = p.EnumNames[i]
				}
				f.Choices = append(f.Choices, aep.Choice{ID: v, Label: label})
			}
		case p.Type == "integer" || p.Type == "number":
			f.Type = aep.FieldNumber
			f.Min, f.Max = p.Minimum, p.Maximum
		case p.Type == "boolean":
			f.Type = aep.FieldBoolean
		default:
			f.Type = aep.FieldString
		}
		fields = append(fields, f)
	}
	return aep.Request{
		Kind:       aep.KindForm,
		Prompt:     in.Message,
		Fields:     fields,
		RespondVia: []string{aep.ViaControl},
	}, fmt.Sprintf("%s requests input (%d fields)", agent, len(fields))
}
