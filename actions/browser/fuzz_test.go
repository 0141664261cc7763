package browser

import (
	"encoding/json"
	"errors"
	"math/big"
	"reflect"
	"strings"
	"testing"
	"unicode/utf8"
)

// FuzzDecodeArguments decodes arbitrary arguments for every member: it never
// panics, refuses with an *ArgumentError naming the member, and what it
// accepts is valid JSON whose decoded arguments survive a round trip.
func FuzzDecodeArguments(f *testing.F) {
	members := AllMembers()
	for i, m := range members {
		f.Add(uint8(i), []byte(validArgs[m]))
	}
	f.Add(uint8(13), []byte(`{"region":[0,0,1e1,9007199254740991],"tab_id":"\ud83d\ude00"}`))
	f.Add(uint8(20), []byte(`{"tab_id":null,"path":[{"x":0,"y":0},{"y":1.0,"x":2e0}],"keys":["Meta"]}`))
	f.Add(uint8(9), []byte(`{"text":" \u2028a\u00a0b ","timeout_ms":30000,"tab_id":null}`))
	f.Fuzz(func(t *testing.T, which uint8, raw []byte) {
		m := members[int(which)%len(members)]
		args, err := DecodeArguments(m, raw)
		if err != nil {
			var ae *ArgumentError
			if !errors.As(err, &ae) || ae.Member != m || !strings.Contains(err.Error(), string(m)) {
				t.Fatalf("%s %q: error %v is not an ArgumentError naming the member", m, raw, err)
			}
			return
		}
		if !json.Valid(raw) || !utf8.Valid(raw) {
			t.Fatalf("%s accepted invalid JSON %q", m, raw)
		}
		if args.Member() != m {
			t.Fatalf("%s: arguments of %s", m, args.Member())
		}
		enc, err := json.Marshal(args)
		if err != nil {
			t.Fatalf("marshal %#v: %v", args, err)
		}
		again, err := DecodeArguments(m, enc)
		if err != nil {
			t.Fatalf("%s: re-decoding %s (from %q): %v", m, enc, raw, err)
		}
		if !reflect.DeepEqual(args, again) {
			t.Fatalf("%s: round trip changed the arguments\n in  %#v\n out %#v", m, args, again)
		}
		if !reflect.DeepEqual(args.clone(), args) {
			t.Fatalf("%s: clone differs", m)
		}
	})
}

// FuzzParseJSON checks the strict parser against encoding/json: whatever it
// accepts, encoding/json accepts too and reads the same values; it refuses
// only for the reasons it documents.
func FuzzParseJSON(f *testing.F) {
	for _, s := range []string{`{}`, `{"a":[1,-2.5e3,true,null,"x\u00e9"]}`, `"\ud83d\ude00"`, `[[[]]]`, `{"a":1,"a":2}`, `"\ud800"`} {
		f.Add([]byte(s))
	}
	f.Fuzz(func(t *testing.T, data []byte) {
		v, err := parseJSON(data)
		if err != nil {
			if json.Valid(data) && utf8.Valid(data) {
				msg := err.Error()
				for _, why := range []string{"surrogate", "duplicate field", "nested deeper"} {
					if strings.Contains(msg, why) {
						return
					}
				}
				t.Fatalf("refused valid JSON %q: %v", data, err)
			}
			return
		}
		if !json.Valid(data) {
			t.Fatalf("accepted invalid JSON %q", data)
		}
		var std any
		dec := json.NewDecoder(strings.NewReader(string(data)))
		dec.UseNumber()
		if err := dec.Decode(&std); err != nil {
			t.Fatalf("encoding/json: %v", err)
		}
		a, _ := json.Marshal(treeToAny(v))
		b, _ := json.Marshal(std)
		if string(a) != string(b) {
			t.Fatalf("%q: parsed %s, encoding/json %s", data, a, b)
		}
	})
}

// FuzzSafeInteger checks the exact integer reading of JSON number literals
// against math/big.
func FuzzSafeInteger(f *testing.F) {
	for _, s := range []string{"0", "-0", "1.0", "1e2", "12300e-2", "9007199254740991", "9007199254740992", "0.5", "1e-400"} {
		f.Add(s)
	}
	f.Fuzz(func(t *testing.T, lit string) {
		v, err := parseJSON([]byte(lit))
		if err != nil || v.kind != jsonNumber || len(lit) > 64 {
			return
		}
		lit = v.text // without the surrounding white space
		got, gotErr := safeInteger(v.text)
		// big.Rat reads the literal exactly; keep exponents small enough
		// for it to be quick.
		if e := strings.IndexAny(lit, "eE"); e >= 0 {
			if n, ok := smallExponent(lit[e+1:]); !ok || n > 400 || n < -400 {
				if gotErr == nil && got != 0 {
					t.Fatalf("%s: %d from a huge exponent", lit, got)
				}
				return
			}
		}
		r, ok := new(big.Rat).SetString(lit)
		if !ok {
			t.Fatalf("big.Rat cannot read %q", lit)
		}
		limit := big.NewInt(MaxSafeInteger)
		want := r.IsInt() && new(big.Int).Abs(r.Num()).Cmp(limit) <= 0
		if want != (gotErr == nil) {
			t.Fatalf("%s: safeInteger = %d, %v; exact value %s", lit, got, gotErr, r.RatString())
		}
		if want && r.Num().Int64() != got {
			t.Fatalf("%s: safeInteger = %d, want %s", lit, got, r.RatString())
		}
	})
}

// FuzzReportedURL checks what state may show of any URL: an origin,
// about:blank or a scheme, within the limit, and stable when reported
// again.
func FuzzReportedURL(f *testing.F) {
	for _, s := range []string{"https://u:p@example.com:8443/p?q#f", "about:blank", "data:text/html,x", "http://[::1]/", "file:///x"} {
		f.Add(s)
	}
	f.Fuzz(func(t *testing.T, raw string) {
		got, err := ReportedURL(raw)
		if err != nil {
			return
		}
		if len(got) > MaxURLBytes || !utf8.ValidString(got) {
			t.Fatalf("%q reported as %q", raw, got)
		}
		if strings.ContainsAny(got, "@?#") {
			t.Fatalf("%q reported with credentials, query or fragment: %q", raw, got)
		}
		if rest, ok := strings.CutPrefix(got, "https://"); ok || strings.HasPrefix(got, "http://") {
			if !ok {
				rest = strings.TrimPrefix(got, "http://")
			}
			if strings.Contains(rest, "/") {
				t.Fatalf("%q reported with a path: %q", raw, got)
			}
		} else if got != "" && got != "about:blank" && !strings.HasSuffix(got, ":") {
			t.Fatalf("%q reported as %q, not an origin, about:blank or a scheme", raw, got)
		}
		again, err := ReportedURL(got)
		if err != nil || again != got {
			t.Fatalf("%q reported as %q, which reports as %q, %v", raw, got, again, err)
		}
	})
}
