package actions

import (
	"encoding/json"
	"reflect"
	"testing"
)

// FuzzDecode checks that Decode never panics and that whatever it accepts
// encodes (MarshalJSON) to JSON that decodes to the same action. Seeds are in
// testdata/fuzz/FuzzDecode.
func FuzzDecode(f *testing.F) {
	f.Fuzz(func(t *testing.T, data []byte) {
		a, err := Decode(data)
		if err != nil {
			return
		}
		if err := a.Validate(); err != nil {
			t.Fatalf("Decode accepted an invalid action %+v: %v", a, err)
		}
		enc, err := json.Marshal(a)
		if err != nil {
			t.Fatalf("marshal %+v: %v", a, err)
		}
		b, err := Decode(enc)
		if err != nil {
			t.Fatalf("re-decode %s (from %q): %v", enc, data, err)
		}
		if !reflect.DeepEqual(a, b) {
			t.Fatalf("round trip changed the action:\n in  %#v\n out %#v\n json %s", a, b, enc)
		}
	})
}
