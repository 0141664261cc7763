package agentd

import (
	"context"
	"errors"
	"fmt"
	"slices"
	"strings"
	"testing"
	"time"

	"github.com/agentd-dev/agentd/actions"
	"github.com/agentd-dev/agentd/actions/wire"
	"github.com/agentd-dev/agentd/guest"
	"github.com/agentd-dev/agentd/internal/agentdtest"
	"github.com/agentd-dev/agentd/internal/poll"
	"github.com/agentd-dev/agentd/runner/computer"
)

func (f *fixture) operate(t *testing.T) *guest.Operator {
	t.Helper()
	o, err := guest.Operate(ctx5(t), f.addr, testToken)
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { o.Close() })
	return o
}

func code(err error) string {
	var e *guest.Error
	if errors.As(err, &e) {
		return e.Code
	}
	return fmt.Sprint(err)
}

type awaited struct {
	hb  computer.Handback
	err error
}

func await(c *guest.Client) chan awaited {
	res := make(chan awaited, 1)
	go func() {
		hb, err := c.AwaitHandback(context.Background())
		res <- awaited{hb, err}
	}()
	return res
}

// stillWaiting fails t if the wait for the hand back has ended.
func stillWaiting(t *testing.T, back chan awaited, when string) {
	t.Helper()
	select {
	case r := <-back:
		t.Fatalf("the wait ended %s: %+v", when, r)
	default:
	}
}

// While a person holds the desktop, every request of the model but the
// wait for the hand back is refused with nothing done, and nothing is
// queued: after the hand back the refused action has still not run. A
// second operator can neither take the desktop nor drive it nor hand it
// back; the holder's own second take is no error.
func TestLeaseRefusesTheModelUntilHandedBack(t *testing.T) {
	f := newFixture(t, nil)
	c := dial(t, f.addr)
	if _, err := c.Screenshot(ctx5(t)); err != nil {
		t.Fatal(err)
	}
	person, other := f.operate(t), f.operate(t)
	if l := person.Hello().Lease; l.Held || person.Hello().Screen.W != 200 {
		t.Fatalf("hello %+v", person.Hello())
	}
	if err := person.Take(ctx5(t), "the tester"); err != nil {
		t.Fatal(err)
	}
	if l := person.Lease(); !l.Held || !l.Mine || l.By != "the tester" {
		t.Fatalf("lease after take: %+v", l)
	}
	if err := person.Take(ctx5(t), "the tester"); err != nil {
		t.Fatalf("the holder's second take: %v", err)
	}
	if err := other.Take(ctx5(t), "someone else"); code(err) != wire.CodeBusy {
		t.Fatalf("a second operator's take: %v", err)
	}
	if l := other.Lease(); !l.Held || l.Mine {
		t.Fatalf("the other operator sees %+v", l)
	}
	if _, err := other.Input(ctx5(t), actions.Action{Type: actions.Click, X: 5, Y: 5, Button: actions.Left}); code(err) != wire.CodeNotHolding {
		t.Fatalf("input without the lease: %v", err)
	}
	if err := other.HandBack(ctx5(t), ""); code(err) != wire.CodeNotHolding {
		t.Fatalf("hand back without the lease: %v", err)
	}

	_, err := c.Do(ctx5(t), actions.Action{Type: actions.Click, X: 150, Y: 50, Button: actions.Left})
	if !errors.Is(err, computer.ErrTakenOver) {
		t.Fatalf("the model's click during the lease: %v", err)
	}
	_, err = c.Run(ctx5(t), []actions.Action{{Type: actions.Move, X: 1, Y: 1}, {Type: actions.TypeText, Text: "x"}}, computer.Hooks{})
	if !errors.Is(err, computer.ErrTakenOver) {
		t.Fatalf("the model's batch during the lease: %v", err)
	}
	if _, err := c.Screenshot(ctx5(t)); !errors.Is(err, computer.ErrTakenOver) {
		t.Fatalf("the model's screenshot during the lease: %v", err)
	}
	if done, _ := f.exec.snapshot(); len(done) != 0 {
		t.Fatalf("the model's refused actions ran: %v", done)
	}

	back := await(c)
	for _, a := range []actions.Action{
		{Type: actions.Click, X: 10, Y: 20, Button: actions.Left},
		{Type: actions.TypeText, Text: "héllo"},
	} {
		if _, err := person.Input(ctx5(t), a); err != nil {
			t.Fatalf("the person's %s: %v", a.Type, err)
		}
	}
	if _, err := person.Input(ctx5(t), actions.Action{Type: actions.Click, X: 200, Y: 5, Button: actions.Left}); code(err) != wire.CodeBadRequest {
		t.Fatalf("a click off the screen: %v", err)
	}
	stillWaiting(t, back, "while the desktop was held")
	if err := person.HandBack(ctx5(t), "I logged in for you ✓"); err != nil {
		t.Fatal(err)
	}
	r := <-back
	if r.err != nil {
		t.Fatal(r.err)
	}
	want := []string{"click left (10,20)", "type 5 chars"}
	if r.hb.Leases != 1 || !slices.Equal(r.hb.Actions, want) || !slices.Equal(r.hb.Notes, []string{"I logged in for you ✓"}) ||
		!slices.Equal(r.hb.By, []string{"the tester"}) || r.hb.Orphaned || r.hb.Returned.Before(r.hb.Taken) {
		t.Fatalf("hand back %+v, want the person's %q and the note", r.hb, want)
	}
	if l := person.Lease(); l.Held {
		t.Fatalf("lease after the hand back: %+v", l)
	}
	if err := person.HandBack(ctx5(t), ""); code(err) != wire.CodeNotHolding {
		t.Fatalf("a second hand back: %v", err)
	}
	// Nothing was queued: the model's next request runs, alone.
	if _, err := c.Do(ctx5(t), actions.Action{Type: actions.Move, X: 3, Y: 4}); err != nil {
		t.Fatal(err)
	}
	done, _ := f.exec.snapshot()
	var got []string
	for _, a := range done {
		got = append(got, a.String())
	}
	if !slices.Equal(got, []string{"click left (10,20)", "type 5 chars", "move (3,4)"}) {
		t.Fatalf("executed %q", got)
	}
	// A wait with nothing held answers at once, with nothing to report.
	if hb, err := c.AwaitHandback(ctx5(t)); err != nil || hb.Leases != 0 {
		t.Fatalf("a wait without a lease: %+v %v", hb, err)
	}
}

// The person's connection goes away while holding the desktop: fail safe.
// The lease stays held (orphaned), every key and button is released, the
// model stays refused and its wait goes on; another operator may take the
// orphaned lease and hand it back, which ends the wait.
func TestLeaseOfADisconnectedOperatorStaysHeld(t *testing.T) {
	f := newFixture(t, nil)
	c := dial(t, f.addr)
	person := f.operate(t)
	if err := person.Take(ctx5(t), "the console"); err != nil {
		t.Fatal(err)
	}
	if _, err := person.Input(ctx5(t), actions.Action{Type: actions.TypeText, Text: "abc"}); err != nil {
		t.Fatal(err)
	}
	_, releasedBefore := f.exec.snapshot()
	person.Close()
	// The server notices the close on its own time.
	deadline := time.Now().Add(5 * time.Second)
	for !f.srv.lease.state(nil).Orphaned && time.Now().Before(deadline) {
		time.Sleep(5 * time.Millisecond)
	}
	later := f.operate(t)
	if l := later.Hello().Lease; !l.Held || !l.Orphaned || l.Mine || l.By != "the console" {
		t.Fatalf("lease seen after the holder left: %+v", l)
	}
	if _, released := f.exec.snapshot(); released <= releasedBefore {
		t.Fatalf("nothing was released when the holder left (%d, before %d)", released, releasedBefore)
	}
	if _, err := c.Do(ctx5(t), actions.Action{Type: actions.Move, X: 1, Y: 1}); !errors.Is(err, computer.ErrTakenOver) {
		t.Fatalf("the model's action while the lease is orphaned: %v", err)
	}
	back := await(c)
	if _, err := later.Input(ctx5(t), actions.Action{Type: actions.Move, X: 1, Y: 1}); code(err) != wire.CodeNotHolding {
		t.Fatalf("input before taking the orphaned lease: %v", err)
	}
	stillWaiting(t, back, "when the holder left")
	if err := later.Take(ctx5(t), "the console"); err != nil {
		t.Fatalf("taking the orphaned lease: %v", err)
	}
	if err := later.HandBack(ctx5(t), ""); err != nil {
		t.Fatal(err)
	}
	r := <-back
	if r.err != nil || r.hb.Leases != 1 || !r.hb.Orphaned || !slices.Equal(r.hb.Actions, []string{"type 3 chars"}) || len(r.hb.Notes) != 0 {
		t.Fatalf("hand back %+v, %v", r.hb, r.err)
	}
}

// Bad operator requests are answered with an error and the connection goes
// on; the watch token is the same, so a wrong one is refused before the
// upgrade.
func TestOperatorBadRequests(t *testing.T) {
	f := newFixture(t, nil)
	if _, err := guest.Operate(ctx5(t), f.addr, "wrong-token-0123456789"); err == nil {
		t.Fatal("an operator with a wrong token was served")
	}
	o := f.operate(t)
	if err := o.Take(ctx5(t), string(make([]byte, 65))); code(err) != wire.CodeBadRequest {
		t.Fatalf("a long name: %v", err)
	}
	if err := o.Take(ctx5(t), ""); err != nil {
		t.Fatal(err)
	}
	if l := o.Lease(); l.By != "an operator" {
		t.Fatalf("unnamed lease: %+v", l)
	}
	if err := o.HandBack(ctx5(t), string(make([]byte, wire.MaxNoteLen+1))); code(err) != wire.CodeBadRequest {
		t.Fatalf("a long note: %v", err)
	}
	if err := o.HandBack(ctx5(t), "ok"); err != nil {
		t.Fatal(err)
	}
}

// A hand back belongs to the controller session the desktop was taken
// during. That session is told of the take over as it happens, and its
// actions stay refused after the hand back until it has collected it. A
// hand back made after that session ended, or that it never collected, is
// dropped with a log line: the next session's wait never returns another
// session's note (issue 26: a later run's model was told an earlier run's
// notes).
func TestHandbackBelongsToItsSession(t *testing.T) {
	var logs agentdtest.SyncBuffer
	f := newFixture(t, func(c *Config) {
		c.Logf = func(format string, args ...any) { fmt.Fprintf(&logs, format+"\n", args...) }
	})
	person := f.operate(t)
	detached := func() {
		t.Helper()
		deadline := time.Now().Add(20 * time.Second)
		for {
			f.srv.mu.Lock()
			gone := !f.srv.active
			f.srv.mu.Unlock()
			if gone {
				return
			}
			if time.Now().After(deadline) {
				t.Fatal("the closed session never ended")
			}
			time.Sleep(5 * time.Millisecond)
		}
	}
	told := func(c *guest.Client, want uint64) {
		t.Helper()
		deadline := time.Now().Add(20 * time.Second)
		for {
			n, next := c.Takeovers()
			if n == want {
				return
			}
			select {
			case <-next:
			case <-time.After(time.Until(deadline)):
				t.Fatalf("the session was told of %d take overs, want %d", n, want)
			}
		}
	}

	// Session A ends while the desktop is taken; the hand back comes after.
	a := dial(t, f.addr)
	// A call first: the dial returns at the handshake, before agentd has
	// made the session its controller, and a take over only tells that one.
	if _, err := a.Screenshot(ctx5(t)); err != nil {
		t.Fatal(err)
	}
	if err := person.Take(ctx5(t), "the console"); err != nil {
		t.Fatal(err)
	}
	told(a, 1)
	a.Close()
	detached()
	if _, err := person.Input(ctx5(t), actions.Action{Type: actions.TypeText, Text: "abc"}); err != nil {
		t.Fatal(err)
	}
	if err := person.HandBack(ctx5(t), "NOTE-A"); err != nil {
		t.Fatal(err)
	}
	if !strings.Contains(logs.String(), "hand back and its note are dropped") {
		t.Errorf("no log line for the dropped hand back:\n%s", logs.String())
	}

	// Session B: A's hand back neither blocks it nor reaches it; its own does.
	b := dial(t, f.addr)
	if _, err := b.Screenshot(ctx5(t)); err != nil {
		t.Fatalf("a new session's screenshot after an earlier session's hand back: %v", err)
	}
	if hb, err := b.AwaitHandback(ctx5(t)); err != nil || hb.Leases != 0 || len(hb.Notes) != 0 {
		t.Fatalf("a new session collected %+v (%v): another session's hand back", hb, err)
	}
	if err := person.Take(ctx5(t), "the console"); err != nil {
		t.Fatal(err)
	}
	told(b, 1)
	if err := person.HandBack(ctx5(t), "NOTE-B"); err != nil {
		t.Fatal(err)
	}
	// Not collected yet: what B saw is out of date, so it may not act.
	if _, err := b.Do(ctx5(t), actions.Action{Type: actions.Move, X: 1, Y: 1}); !errors.Is(err, computer.ErrTakenOver) {
		t.Fatalf("an action before the hand back was collected: %v", err)
	}
	if _, err := b.Screenshot(ctx5(t)); !errors.Is(err, computer.ErrTakenOver) {
		t.Fatalf("a screenshot before the hand back was collected: %v", err)
	}
	hb, err := b.AwaitHandback(ctx5(t))
	if err != nil || hb.Leases != 1 || !slices.Equal(hb.Notes, []string{"NOTE-B"}) || len(hb.Actions) != 0 {
		t.Fatalf("session B collected %+v (%v), want its own one lease with NOTE-B only", hb, err)
	}
	if _, err := b.Do(ctx5(t), actions.Action{Type: actions.Move, X: 1, Y: 1}); err != nil {
		t.Fatalf("an action after the hand back was collected: %v", err)
	}

	// B ends without collecting a hand back: dropped, never C's.
	if err := person.Take(ctx5(t), "the console"); err != nil {
		t.Fatal(err)
	}
	if err := person.HandBack(ctx5(t), "NOTE-C"); err != nil {
		t.Fatal(err)
	}
	b.Close()
	detached()
	if !strings.Contains(logs.String(), "1 hand back(s) of the desktop this session never collected are dropped") {
		t.Errorf("no log line for the uncollected hand back:\n%s", logs.String())
	}
	c := dial(t, f.addr)
	if hb, err := c.AwaitHandback(ctx5(t)); err != nil || hb.Leases != 0 || len(hb.Notes) != 0 {
		t.Fatalf("session C collected %+v (%v): another session's hand back", hb, err)
	}
}

// There are at most wire.MaxOperators operators; one more is refused, and
// a place freed by one that leaves is given to the next.
func TestOperatorsAtMost(t *testing.T) {
	f := newFixture(t, nil)
	var ops []*guest.Operator
	for range wire.MaxOperators {
		ops = append(ops, f.operate(t))
	}
	if o, err := guest.Operate(ctx5(t), f.addr, testToken); err == nil {
		o.Close()
		t.Fatal("one operator more than the limit was let in")
	}
	ops[0].Close()
	poll.Until(t, 10*time.Second, "an operator's place is free again", func() bool {
		o, err := guest.Operate(ctx5(t), f.addr, testToken)
		if err == nil {
			o.Close()
		}
		return err == nil
	})
}
