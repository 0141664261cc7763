package runner

import (
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"math"
	"reflect"
	"slices"
	"strings"
)

// SchemaOf derives the strict JSON schema of a Go type for a function
// tool's parameters: every struct field (by its json name) is required,
// objects allow no additional properties, pointers are nullable. Supported:
// structs, strings, bools, integers, floats, slices and arrays, and
// pointers to them; a `jsonschema:"description"` tag describes a field.
func SchemaOf(t reflect.Type) (map[string]any, error) {
	s, err := schemaOf(t, map[reflect.Type]bool{})
	if err != nil {
		return nil, err
	}
	if s["type"] != "object" {
		return nil, fmt.Errorf("parameters must be a struct, not %s", t)
	}
	return s, nil
}

func schemaOf(t reflect.Type, seen map[reflect.Type]bool) (map[string]any, error) {
	switch t.Kind() {
	case reflect.Pointer:
		s, err := schemaOf(t.Elem(), seen)
		if err != nil {
			return nil, err
		}
		s["type"] = []any{s["type"], "null"}
		return s, nil
	case reflect.String:
		return map[string]any{"type": "string"}, nil
	case reflect.Bool:
		return map[string]any{"type": "boolean"}, nil
	case reflect.Int, reflect.Int8, reflect.Int16, reflect.Int32, reflect.Int64,
		reflect.Uint, reflect.Uint8, reflect.Uint16, reflect.Uint32, reflect.Uint64:
		return map[string]any{"type": "integer"}, nil
	case reflect.Float32, reflect.Float64:
		return map[string]any{"type": "number"}, nil
	case reflect.Slice, reflect.Array:
		items, err := schemaOf(t.Elem(), seen)
		if err != nil {
			return nil, err
		}
		return map[string]any{"type": "array", "items": items}, nil
	case reflect.Struct:
		if seen[t] {
			return nil, fmt.Errorf("%s refers to itself; a strict schema cannot", t)
		}
		seen[t] = true
		defer delete(seen, t)
		props := map[string]any{}
		required := []any{}
		for i := range t.NumField() {
			f := t.Field(i)
			if !f.IsExported() {
				continue
			}
			name, _, _ := strings.Cut(f.Tag.Get("json"), ",")
			if name == "-" {
				continue
			}
			if name == "" {
				name = f.Name
			}
			s, err := schemaOf(f.Type, seen)
			if err != nil {
				return nil, fmt.Errorf("field %s: %w", f.Name, err)
			}
			if d := f.Tag.Get("jsonschema"); d != "" {
				s["description"] = d
			}
			props[name] = s
			required = append(required, name)
		}
		return map[string]any{"type": "object", "properties": props, "required": required, "additionalProperties": false}, nil
	}
	return nil, fmt.Errorf("type %s has no strict JSON schema", t)
}

// checkStrict makes sure a schema is one strict mode accepts: every object
// lists all its properties as required and closes additionalProperties.
func checkStrict(where string, schema map[string]any) error {
	if types(schema["type"]) == nil {
		return fmt.Errorf("%s: no type", where)
	}
	if slices.Contains(types(schema["type"]), "object") {
		if schema["additionalProperties"] != false {
			return fmt.Errorf("%s: additionalProperties must be false", where)
		}
		props, _ := schema["properties"].(map[string]any)
		required := names(schema["required"])
		for name, p := range props {
			if !slices.Contains(required, name) {
				return fmt.Errorf("%s: property %q must be required", where, name)
			}
			ps, ok := p.(map[string]any)
			if !ok {
				return fmt.Errorf("%s.%s: not a schema", where, name)
			}
			if err := checkStrict(where+"."+name, ps); err != nil {
				return err
			}
		}
		for _, name := range required {
			if _, ok := props[name]; !ok {
				return fmt.Errorf("%s: required %q is no property", where, name)
			}
		}
	}
	if items, ok := schema["items"].(map[string]any); ok {
		return checkStrict(where+"[]", items)
	}
	return nil
}

// validate checks a decoded JSON value against a strict schema: types,
// required and unknown properties, array items and enums.
func validate(path string, schema map[string]any, v any) error {
	want := types(schema["type"])
	got := jsonType(v)
	if !slices.Contains(want, got) && !(got == "integer" && slices.Contains(want, "number")) {
		return fmt.Errorf("%s is %s, want %s", path, got, strings.Join(want, " or "))
	}
	if enum, ok := schema["enum"].([]any); ok && !slices.ContainsFunc(enum, func(e any) bool { return reflect.DeepEqual(e, v) }) {
		return fmt.Errorf("%s is not one of the allowed values", path)
	}
	switch v := v.(type) {
	case map[string]any:
		props, _ := schema["properties"].(map[string]any)
		for _, name := range names(schema["required"]) {
			if _, ok := v[name]; !ok {
				return fmt.Errorf("%s: missing field %q", path, name)
			}
		}
		keys := make([]string, 0, len(v))
		for k := range v {
			keys = append(keys, k)
		}
		slices.Sort(keys)
		for _, k := range keys {
			ps, ok := props[k].(map[string]any)
			if !ok {
				return fmt.Errorf("%s: unexpected field %q", path, k)
			}
			if err := validate(path+"."+k, ps, v[k]); err != nil {
				return err
			}
		}
	case []any:
		if items, ok := schema["items"].(map[string]any); ok {
			for i, e := range v {
				if err := validate(fmt.Sprintf("%s[%d]", path, i), items, e); err != nil {
					return err
				}
			}
		}
	}
	return nil
}

func jsonType(v any) string {
	switch v := v.(type) {
	case nil:
		return "null"
	case bool:
		return "boolean"
	case string:
		return "string"
	case json.Number:
		if f, err := v.Float64(); err == nil && f == math.Trunc(f) && !strings.ContainsAny(string(v), ".eE") {
			return "integer"
		}
		return "number"
	case []any:
		return "array"
	case map[string]any:
		return "object"
	}
	return fmt.Sprintf("%T", v)
}

func types(t any) []string {
	switch t := t.(type) {
	case string:
		return []string{t}
	case []any:
		return names(t)
	case []string:
		return t
	}
	return nil
}

func names(v any) []string {
	var out []string
	switch v := v.(type) {
	case []any:
		for _, e := range v {
			if s, ok := e.(string); ok {
				out = append(out, s)
			}
		}
	case []string:
		out = v
	}
	return out
}

// decodeJSON decodes one JSON value, numbers kept exact, nothing after it.
func decodeJSON(data []byte) (any, error) {
	dec := json.NewDecoder(strings.NewReader(string(data)))
	dec.UseNumber()
	var v any
	if err := dec.Decode(&v); err != nil {
		return nil, err
	}
	if _, err := dec.Token(); err != io.EOF {
		return nil, errors.New("text after the JSON value")
	}
	return v, nil
}
