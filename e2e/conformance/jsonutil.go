package conformance

import (
	"bytes"
	"encoding/json"
	"fmt"
	"reflect"
	"strconv"
)

// decodeJSON decodes b keeping numbers as json.Number, so equality is exact.
func decodeJSON(b []byte) (any, error) {
	d := json.NewDecoder(bytes.NewReader(b))
	d.UseNumber()
	var v any
	if err := d.Decode(&v); err != nil {
		return nil, err
	}
	if d.More() {
		return nil, fmt.Errorf("trailing data after JSON value")
	}
	return v, nil
}

// jsonEqual reports whether a and b hold the same JSON value (member order
// and whitespace aside).
func jsonEqual(a, b []byte) bool {
	va, err1 := decodeJSON(a)
	vb, err2 := decodeJSON(b)
	return err1 == nil && err2 == nil && reflect.DeepEqual(normNum(va), normNum(vb))
}

// number is a JSON number in canonical text, a type of its own so it
// never equals a string.
type number string

// normNum rewrites json.Numbers to canonical numbers so 3 and 3.0 compare
// equal.
func normNum(v any) any {
	switch x := v.(type) {
	case json.Number:
		if f, err := x.Float64(); err == nil {
			return number(strconv.FormatFloat(f, 'g', -1, 64))
		}
		return number(x.String())
	case map[string]any:
		for k, e := range x {
			x[k] = normNum(e)
		}
	case []any:
		for i, e := range x {
			x[i] = normNum(e)
		}
	}
	return v
}

// object decodes b as a JSON object of raw members.
func object(b []byte) (map[string]json.RawMessage, error) {
	var m map[string]json.RawMessage
	if err := json.Unmarshal(b, &m); err != nil {
		return nil, err
	}
	if m == nil {
		return nil, fmt.Errorf("not a JSON object: %s", clip(b))
	}
	return m, nil
}

// str returns the string member name of m, "" when absent or not a string.
func str(m map[string]json.RawMessage, name string) string {
	var s string
	_ = json.Unmarshal(m[name], &s)
	return s
}

func mustJSON(v any) []byte {
	b, err := json.Marshal(v)
	if err != nil {
		panic(err)
	}
	return b
}

// clip shortens b for a failure message.
func clip(b []byte) string {
	const n = 300
	if len(b) > n {
		return string(b[:n]) + "..."
	}
	return string(b)
}

func itoa(n int) string { return strconv.Itoa(n) }

func fmtAny(v any) string { return fmt.Sprint(v) }
