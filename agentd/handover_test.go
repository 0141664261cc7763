package agentd

import (
	"testing"
	"time"

	"github.com/agentd-dev/agentd/guest"
)

// slowRelease is an executor whose release takes a while, as releasing
// held keys on a busy X server can.
type slowRelease struct{ *fakeExec }

func (s slowRelease) ReleaseAll() error {
	time.Sleep(200 * time.Millisecond)
	return s.fakeExec.ReleaseAll()
}

// TestClosedControllerHandsOver: a controller that closes its connection
// and a new one that connects right after (agentctl act twice in a row)
// get no "busy", though the old session is still releasing its inputs.
func TestClosedControllerHandsOver(t *testing.T) {
	f := newFixture(t, func(c *Config) { c.Exec = slowRelease{&fakeExec{}} })
	for i := range 5 {
		c, err := guest.Dial(ctx5(t), f.addr, testToken)
		if err != nil {
			t.Fatalf("dial %d right after the previous controller closed: %v", i, err)
		}
		if _, err := c.Screenshot(ctx5(t)); err != nil {
			t.Fatal(err)
		}
		c.Close()
	}
}
