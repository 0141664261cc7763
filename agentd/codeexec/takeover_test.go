//go:build linux

package codeexec_test

import (
	"context"
	"errors"
	"strings"
	"testing"
	"time"

	"github.com/agentd-dev/agentd/actions"
	"github.com/agentd-dev/agentd/actions/wire"
	"github.com/agentd-dev/agentd/guest"
	"github.com/agentd-dev/agentd/internal/xrecorder"
	"github.com/agentd-dev/agentd/runner"
	"github.com/agentd-dev/agentd/runner/codetool"
	"github.com/agentd-dev/agentd/tools/respserver"
)

// codeRow is the row the model's code moves the pointer along in these
// tests; no other input of theirs goes there.
const codeRow = 100

// moverCode holds shift and moves the pointer along codeRow until stopped.
const moverCode = `pyautogui.PAUSE = 0
pyautogui.keyDown('shift')
i = 0
while True:
    pyautogui.moveTo(100 + i % 400, 100)
    i += 1
`

type execDone struct {
	res wire.ExecResult
	err error
}

func execAsync(c *guest.Client, code string, deadline time.Duration) chan execDone {
	done := make(chan execDone, 1)
	go func() {
		ctx, cancel := context.WithTimeout(context.Background(), 2*time.Minute)
		defer cancel()
		res, err := c.Exec(ctx, code, deadline)
		done <- execDone{res, err}
	}()
	return done
}

func motions(evs []xrecorder.Event, y int) int {
	n := 0
	for _, e := range evs {
		if e.Kind == xrecorder.Motion && e.Y == y {
			n++
		}
	}
	return n
}

// operator connects a person to d's agentd in the operator role (as the
// console does), with a minute for what the test asks of it.
func (d *desk) operator(t *testing.T) (*guest.Operator, context.Context) {
	person, err := guest.Operate(context.Background(), d.addr, testToken)
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { person.Close() })
	ctx, cancel := context.WithTimeout(context.Background(), 60*time.Second)
	t.Cleanup(cancel)
	return person, ctx
}

// takeFromMovingCode waits until the model's code (moverCode) moves the
// pointer, then has a person take the desktop over.
func (d *desk) takeFromMovingCode(t *testing.T) (*guest.Operator, context.Context) {
	d.rec.WaitUntil(t, func(evs []xrecorder.Event) bool { return motions(evs, codeRow) >= 20 }, 60*time.Second)
	person, ctx := d.operator(t)
	if err := person.Take(ctx, "the tester"); err != nil {
		t.Fatal(err)
	}
	return person, ctx
}

// checkPausedAndHandedBack fails t unless the run's take over events are
// the pause and the hand back, in this order.
func checkPausedAndHandedBack(t *testing.T, events []runner.Event) {
	t.Helper()
	var phases []string
	for _, e := range events {
		if e.Kind == runner.EventTakeover {
			phases = append(phases, e.Takeover.Phase)
		}
	}
	if strings.Join(phases, ",") != "paused,handed_back" {
		t.Fatalf("take over events %q", phases)
	}
}

// TestTakeoverStopsRunningCode: a person's take over (the operator role, as
// the console takes it) stops an exec_py that is moving the pointer. Once
// the take is answered nothing the code held is down, no pointer event of
// the code reaches X any more, the person drives, the exec's result tells
// the model a person took over, and the model is refused until the hand
// back, after which its code runs again in a fresh namespace.
func TestTakeoverStopsRunningCode(t *testing.T) {
	d := newDesk(t)
	d.rec.Clear()
	done := execAsync(d.client, moverCode, 90*time.Second)
	person, ctx := d.takeFromMovingCode(t)
	d.rec.Sync(t)
	granted := len(d.rec.Events())
	if keys, mask := d.rec.Down(t); len(keys) != 0 || mask != 0 {
		t.Errorf("when the take was answered the code's keys %v (mask %#x) were still down", keys, mask)
	}

	var got execDone
	select {
	case got = <-done:
	case <-time.After(60 * time.Second):
		t.Fatal("the exec did not end after the take over")
	}
	// The person drives; anything of the code queued behind would show now.
	if _, err := person.Input(ctx, actions.Action{Type: actions.Move, X: 700, Y: 600}); err != nil {
		t.Fatal(err)
	}
	d.rec.WaitFor(t, func(e xrecorder.Event) bool { return e.Kind == xrecorder.Motion && e.X == 700 && e.Y == 600 }, 30*time.Second)
	time.Sleep(500 * time.Millisecond)
	d.rec.Sync(t)
	if n := motions(d.rec.Events()[granted:], codeRow); n != 0 {
		t.Errorf("%d pointer events of the model's code reached X after the take over", n)
	}

	if got.err != nil {
		t.Fatalf("exec stopped by the take over: %v", got.err)
	}
	if got.res.Stopped != "taken_over" || !got.res.NamespaceLost || !strings.Contains(got.res.Output, "a person took over the desktop") {
		t.Fatalf("the exec's result does not say a person took over: %+v", got.res)
	}
	_, err := d.client.Exec(ctx, "print(1)", 0)
	var e *guest.Error
	if !errors.As(err, &e) || e.Code != wire.CodeTakenOver {
		t.Fatalf("exec while taken over: %v", err)
	}
	if err := person.HandBack(ctx, ""); err != nil {
		t.Fatal(err)
	}
	if res := d.run(t, "print('again')"); !res.FreshNamespace || res.Output != "again\n" {
		t.Fatalf("exec after the hand back: %+v", res)
	}
}

// TestTakeoverCodeModeRunWaitsForTheHandBack: in a code-mode run (the real
// SDK, the scripted model) a take over stops the model's running code; the
// run waits for the hand back, records both moments, and answers the call
// with what happened and the person's note; the run then goes on.
func TestTakeoverCodeModeRunWaitsForTheHandBack(t *testing.T) {
	d := newDesk(t)
	srv, url := respserver.Start(
		respserver.Items(codeCall(moverCode)),
		respserver.Items(codeCall("print('after')")),
		respserver.Final("done"))
	defer srv.Close()
	client := respserver.Client(url)
	paused := make(chan struct{}, 1)
	var events []runner.Event
	tool := codetool.New(d.client, codetool.Options{Deadline: 90 * time.Second})
	ran := make(chan error, 1)
	go func() {
		_, err := runner.NewRunner(client).Run(context.Background(), runner.RunOptions{Model: "m", Input: "x", Tools: []runner.Tool{tool},
			OnEvent: func(e runner.Event) {
				events = append(events, e)
				if e.Kind == runner.EventTakeover && e.Takeover.Phase == runner.TakeoverPaused {
					paused <- struct{}{}
				}
			}})
		ran <- err
	}()
	person, ctx := d.takeFromMovingCode(t)
	select {
	case <-paused:
	case err := <-ran:
		t.Fatalf("the run ended instead of waiting for the hand back: %v", err)
	case <-ctx.Done():
		t.Fatal("the run did not pause at the take over")
	}
	if err := person.HandBack(ctx, "closed the dialog"); err != nil {
		t.Fatal(err)
	}
	select {
	case err := <-ran:
		if err != nil {
			t.Fatal(err)
		}
	case <-ctx.Done():
		t.Fatal("the run did not end after the hand back")
	}
	reqs := srv.Requests()
	if len(reqs) != 3 {
		t.Fatalf("%d requests, want 3", len(reqs))
	}
	out, _ := outputsOf(t, reqs[1].Body)[0]["output"].([]any)
	text := out[0].(map[string]any)["text"].(string)
	if !strings.Contains(text, "stopped: a person took over the desktop") || !strings.Contains(text, "the person's note: closed the dialog") {
		t.Fatalf("what the model was told of the take over: %q", text)
	}
	checkPausedAndHandedBack(t, events)
}

// TestTakeoverBeforeTheFinalMessageCodeMode: in a code-mode run, a take
// over and hand back while the model writes its final message do not end
// the run on that message: the model is told, with the person's note, and
// its next answer ends the run; both moments are recorded.
func TestTakeoverBeforeTheFinalMessageCodeMode(t *testing.T) {
	d := newDesk(t)
	srv, url := respserver.Start(
		respserver.Items(codeCall("print('first')")),
		respserver.Final("done"),
		respserver.Final("done, after the note"))
	defer srv.Close()
	client := respserver.Client(url)
	person, ctx := d.operator(t)
	var events []runner.Event
	var personErr error
	tool := codetool.New(d.client, codetool.Options{})
	res, err := runner.NewRunner(client).Run(ctx, runner.RunOptions{Model: "m", Input: "x", Tools: []runner.Tool{tool},
		OnEvent: func(e runner.Event) {
			events = append(events, e)
			if e.Kind == runner.EventRequest && e.Step == 2 {
				personErr = errors.Join(person.Take(ctx, "the tester"), person.HandBack(ctx, "NOTE-6610 I renamed the file"))
			}
		}})
	if personErr != nil {
		t.Fatal(personErr)
	}
	if err != nil {
		t.Fatal(err)
	}
	if res.FinalMessage != "done, after the note" {
		t.Fatalf("the run ended with %q, written before the person's take over", res.FinalMessage)
	}
	reqs := srv.Requests()
	if len(reqs) != 3 {
		t.Fatalf("%d requests, want 3", len(reqs))
	}
	for _, want := range []string{"A person took over the desktop", "NOTE-6610 I renamed the file", "display(pyautogui.screenshot())"} {
		if !strings.Contains(string(reqs[2].Body), want) {
			t.Errorf("the request after the hand back lacks %q", want)
		}
	}
	checkPausedAndHandedBack(t, events)
}

// stallCode asks agentd for a screenshot, larger than the pipe holds, and
// never reads the answer: agentd's write to the worker blocks.
const stallCode = `import os, struct, time
head = b'{"op": "screenshot"}'
os.write(4, struct.pack(">II", len(head), 0) + head)
print("asked", flush=True)
time.sleep(3600)
`

// TestStalledWorkerEndsAtItsDeadline: a worker that never reads agentd's
// answer is still stopped at the exec's deadline, and the session goes on.
func TestStalledWorkerEndsAtItsDeadline(t *testing.T) {
	d := newDesk(t)
	var got execDone
	select {
	case got = <-execAsync(d.client, stallCode, 2*time.Second):
	case <-time.After(90 * time.Second):
		t.Fatal("the exec of a worker that does not read did not end at its deadline")
	}
	if got.err != nil || got.res.Stopped != "deadline" || !got.res.NamespaceLost {
		t.Fatalf("stalled worker at its deadline: %+v %v", got.res, got.err)
	}
	if res := d.run(t, "print('next')"); !res.FreshNamespace || res.Output != "next\n" {
		t.Fatalf("the call after: %+v", res)
	}
}

// TestStalledWorkerCancel: the client's cancel ends the exec of a worker
// that never reads agentd's answer; agentd confirms it.
func TestStalledWorkerCancel(t *testing.T) {
	d := newDesk(t)
	d.run(t, "pass")
	ctx, cancel := context.WithCancel(context.Background())
	done := make(chan error, 1)
	go func() {
		_, err := d.client.Exec(ctx, stallCode, 5*time.Minute)
		done <- err
	}()
	time.Sleep(time.Second)
	cancel()
	var err error
	select {
	case err = <-done:
	case <-time.After(90 * time.Second):
		t.Fatal("the cancelled exec did not end")
	}
	var e *guest.Error
	if !errors.Is(err, context.Canceled) || !errors.As(err, &e) || e.Code != wire.CodeCancelled {
		t.Fatalf("cancelled exec of a worker that does not read: %v", err)
	}
	if res := d.run(t, "print('next')"); !res.FreshNamespace || res.Output != "next\n" {
		t.Fatalf("the call after: %+v", res)
	}
}

// TestStalledWorkerFreesTheSlotWhenTheClientGoes: a controller whose code
// stalls agentd's writes goes away; a new controller connects (it is not
// refused as busy) and runs code.
func TestStalledWorkerFreesTheSlotWhenTheClientGoes(t *testing.T) {
	d := newDesk(t)
	d.run(t, "pass")
	done := execAsync(d.client, stallCode, 5*time.Minute)
	time.Sleep(time.Second)
	d.client.Close()
	<-done

	deadline := time.Now().Add(60 * time.Second)
	var c *guest.Client
	for {
		ctx, cancel := context.WithTimeout(context.Background(), 10*time.Second)
		var err error
		c, err = guest.Dial(ctx, d.addr, testToken)
		cancel()
		if err == nil {
			break
		}
		if time.Now().After(deadline) {
			t.Fatalf("a new controller after the first went away: %v", err)
		}
		time.Sleep(200 * time.Millisecond)
	}
	defer c.Close()
	ctx, cancel := context.WithTimeout(context.Background(), 60*time.Second)
	defer cancel()
	res, err := c.Exec(ctx, "print('mine')", 0)
	if err != nil || res.Output != "mine\n" {
		t.Fatalf("the new controller's exec: %+v %v", res, err)
	}
}
