package agentd

import (
	"encoding/json"
	"testing"

	"github.com/agentd-dev/agentd/actions/wire"
)

// FuzzDecodeRequest: no message makes the decoder panic, and every request
// it accepts is one agentd can run: a known op, a non-zero id, and actions
// that encode and decode again to themselves.
func FuzzDecodeRequest(f *testing.F) {
	for _, seed := range []string{
		`{"id":1,"op":"batch","actions":[{"type":"click","x":1,"y":2,"button":"right","keys":["ctrl"]}]}`,
		`{"id":2,"op":"action","action":{"type":"type","text":"Zoë"}}`,
		`{"id":10,"op":"action","actions":[{"type":"move","x":1,"y":1},{"type":"wait"}]}`,
		`{"id":3,"op":"screenshot","view":{"crop":{"x":1,"y":2,"width":3,"height":4},"width":5,"height":6,"fit":true}}`,
		`{"id":4,"op":"cancel","target":3}`,
		`{"id":5,"op":"release_all"}`,
		`{"id":6,"op":"batch","actions":[{"type":"drag","path":[{"x":1,"y":1},{"x":2,"y":2}]}]}`,
		`{"id":7,"op":"batch","actions":[{"type":"keypress","keys":["CTRL","ALT","DELETE"]},{"type":"wait"}]}`,
		`{"id":8,"op":"batch","gate":true,"actions":[{"type":"move","x":1,"y":1}]}`,
		`{"id":9,"op":"go","target":8,"index":1}`,
		`{}`, `[]`, `null`, `{"id":1e99}`,
	} {
		f.Add([]byte(seed))
	}
	f.Fuzz(func(t *testing.T, data []byte) {
		req, err := decodeRequest(data)
		if err != nil {
			return
		}
		switch req.op {
		case wire.OpBatch, wire.OpAction:
			if len(req.actions) == 0 {
				t.Fatalf("accepted %s with no actions", req.op)
			}
		case wire.OpScreenshot, wire.OpReleaseAll, wire.OpCancel, wire.OpGo, wire.OpExec, wire.OpBrowser:
		default:
			t.Fatalf("accepted unknown op %q", req.op)
		}
		if req.id == 0 {
			t.Fatal("accepted id 0")
		}
		for i, a := range req.actions {
			b, err := json.Marshal(a)
			if err != nil {
				t.Fatalf("action %d does not encode: %v", i, err)
			}
			var back = a
			if err := json.Unmarshal(b, &back); err != nil {
				t.Fatalf("action %d re-encoded as %s does not decode: %v", i, b, err)
			}
		}
	})
}
