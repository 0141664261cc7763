package browser

import (
	"encoding/json"
	"strings"
	"testing"
)

// encodeTree writes a parsed value back as JSON.
func encodeTree(v jsonValue) string {
	switch v.kind {
	case jsonNull:
		return "null"
	case jsonBool:
		if v.b {
			return "true"
		}
		return "false"
	case jsonNumber:
		return v.text
	case jsonString:
		b, _ := json.Marshal(v.text)
		return string(b)
	case jsonArray:
		parts := make([]string, len(v.items))
		for i, it := range v.items {
			parts[i] = encodeTree(it)
		}
		return "[" + strings.Join(parts, ",") + "]"
	}
	parts := make([]string, len(v.keys))
	for i, k := range v.keys {
		kb, _ := json.Marshal(k)
		parts[i] = string(kb) + ":" + encodeTree(v.vals[i])
	}
	return "{" + strings.Join(parts, ",") + "}"
}

// treeToAny converts a parsed value to what encoding/json gives with
// UseNumber.
func treeToAny(v jsonValue) any {
	switch v.kind {
	case jsonBool:
		return v.b
	case jsonNumber:
		return json.Number(v.text)
	case jsonString:
		return v.text
	case jsonArray:
		out := make([]any, len(v.items))
		for i, it := range v.items {
			out[i] = treeToAny(it)
		}
		return out
	case jsonObject:
		out := make(map[string]any, len(v.keys))
		for i, k := range v.keys {
			out[k] = treeToAny(v.vals[i])
		}
		return out
	}
	return nil
}

func TestParseJSON(t *testing.T) {
	cases := []struct {
		in  string
		ok  bool
		why string
	}{
		{`{}`, true, ""},
		{` {"a" : [1, -0.5e+3, true, false, null, "x"]} `, true, ""},
		{`"\u00e9\ud83d\ude00\n\"\\\/"`, true, ""},
		{"\"caf\u00e9\"", true, ""},
		{``, false, "end of input"},
		{`{"a":1,}`, false, "field name"},
		{`[1,]`, false, "unexpected character"},
		{`{"a":1 "b":2}`, false, "expected ','"},
		{`{"a" 1}`, false, "expected ':'"},
		{`01`, false, "after the value"},
		{`1.`, false, "no digits after '.'"},
		{`1e`, false, "no digits in the exponent"},
		{`-`, false, "invalid number"},
		{`+1`, false, "unexpected character"},
		{`NaN`, false, "unexpected character"},
		{`tru`, false, "unexpected character"},
		{`"abc`, false, "unterminated string"},
		{"\"a\tb\"", false, "control character"},
		{`"\x"`, false, "invalid escape"},
		{`"\u12"`, false, "short"},
		{`"\u12zz"`, false, "invalid hex digit"},
		{`"\ud800x"`, false, "lone high surrogate"},
		{`"\ud800\u0041"`, false, "not followed by a low one"},
		{`"\udfff"`, false, "lone low surrogate"},
		{"\"\xc3\x28\"", false, "invalid UTF-8"},
		{"\"\xed\xa0\x80\"", false, "invalid UTF-8"}, // an encoded surrogate
		{`{"a":1,"a":2}`, false, "duplicate field"},
		{`{"a":1,"\u0061":2}`, false, "duplicate field"},
		{strings.Repeat("[", 16) + strings.Repeat("]", 16), true, ""},
		{strings.Repeat("[", 17) + strings.Repeat("]", 17), false, "nested deeper"},
		{`{} {}`, false, "after the value"},
	}
	for _, c := range cases {
		v, err := parseJSON([]byte(c.in))
		if c.ok {
			if err != nil {
				t.Errorf("%q: %v", c.in, err)
				continue
			}
			var std any
			dec := json.NewDecoder(strings.NewReader(c.in))
			dec.UseNumber()
			if err := dec.Decode(&std); err != nil {
				t.Fatalf("%q: encoding/json: %v", c.in, err)
			}
			if got, want := mustJSON(t, treeToAny(v)), mustJSON(t, std); got != want {
				t.Errorf("%q: parsed %s, encoding/json %s", c.in, got, want)
			}
			continue
		}
		if err == nil || !strings.Contains(err.Error(), c.why) {
			t.Errorf("%q: error %v, want %q", c.in, err, c.why)
		}
	}
}

func mustJSON(t *testing.T, v any) string {
	t.Helper()
	b, err := json.Marshal(v)
	if err != nil {
		t.Fatal(err)
	}
	return string(b)
}

func TestSafeInteger(t *testing.T) {
	cases := []struct {
		lit  string
		want int64
		ok   bool
	}{
		{"0", 0, true},
		{"-0", 0, true},
		{"0.000", 0, true},
		{"0e999999999999999999999", 0, true},
		{"7", 7, true},
		{"-7", -7, true},
		{"1.0", 1, true},
		{"1.50e1", 15, true},
		{"1e2", 100, true},
		{"12300e-2", 123, true},
		{"9007199254740991", MaxSafeInteger, true},
		{"-9007199254740991", -MaxSafeInteger, true},
		{"9007199254740991.0", MaxSafeInteger, true},
		{"9.007199254740991e15", MaxSafeInteger, true},
		{"1" + strings.Repeat("0", 40) + "e-40", 1, true},
		{"9007199254740992", 0, false},
		{"1e16", 0, false},
		{"1.5", 0, false},
		{"1e-1", 0, false},
		{"0.99999999999999999999", 0, false},
		{"1e400", 0, false},
		{"1e-400", 0, false},
		{"1e9999999999999999999", 0, false},
		{"123456789012345678901234567890", 0, false},
	}
	for _, c := range cases {
		got, err := safeInteger(c.lit)
		if c.ok != (err == nil) || got != c.want {
			t.Errorf("safeInteger(%s) = %d, %v; want %d, ok %v", c.lit, got, err, c.want, c.ok)
		}
	}
}
