package guest

import (
	"testing"

	"github.com/agentd-dev/agentd/actions/wire"
)

// FuzzParseServerMessage: nothing agentd (or whatever answers in its place)
// sends makes the client panic, and what it accepts is a well-formed
// progress, ready or final reply: an error always carries its reason. Seeds are in
// testdata/fuzz/FuzzParseServerMessage.
func FuzzParseServerMessage(f *testing.F) {
	f.Fuzz(func(t *testing.T, data []byte) {
		m, err := parseServerMessage(data)
		if err != nil {
			return
		}
		if m.progress != nil {
			return
		}
		if m.ready != nil {
			if m.ready.Index < 0 {
				t.Fatalf("accepted a ready for step %d: %s", m.ready.Index, data)
			}
			return
		}
		rep := m.reply
		switch rep.Op {
		case wire.OpDone:
		case wire.OpError:
			if rep.Error == nil {
				t.Fatalf("accepted an error without a reason: %s", data)
			}
		default:
			t.Fatalf("accepted op %q: %s", rep.Op, data)
		}
	})
}
