package main

import (
	"bytes"
	"context"
	"errors"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/agentd-dev/agentd/tools/respserver"
)

// watchWriter is a buffer that closes seen once its text holds want.
type watchWriter struct {
	mu   sync.Mutex
	buf  bytes.Buffer
	want string
	seen chan struct{}
}

func (w *watchWriter) Write(p []byte) (int, error) {
	w.mu.Lock()
	defer w.mu.Unlock()
	had := strings.Contains(w.buf.String(), w.want)
	w.buf.Write(p)
	if !had && strings.Contains(w.buf.String(), w.want) {
		close(w.seen)
	}
	return len(p), nil
}

func (w *watchWriter) String() string {
	w.mu.Lock()
	defer w.mu.Unlock()
	return w.buf.String()
}

// --stream prints the model's text while the response is still arriving:
// the server holds the stream after the message until it is printed.
func TestRunStreamPrintsTextAsItArrives(t *testing.T) {
	out := &watchWriter{want: "looking \uFFFD[2J first", seen: make(chan struct{})}
	turn := respserver.Items(respserver.Message("looking \x1b[2J first", "commentary"), respserver.ComputerCall(`{"type":"screenshot"}`))
	turn.Stream.AfterItem = func(i int) error {
		if i != 0 {
			return nil
		}
		select {
		case <-out.seen:
			return nil
		case <-time.After(time.Minute):
			return errors.New("the message was not printed while the stream was held")
		}
	}
	srv, _, dir := harness(t, turn, respserver.Final("all done"))
	var errOut bytes.Buffer
	err := runCommand(context.Background(), []string{"--guest", "127.0.0.1:7000", "--record-dir", dir, "--stream", "look"}, devNull(t), out, &errOut)
	if err != nil {
		t.Fatalf("%v\n%s%s", err, out.String(), errOut.String())
	}
	if err := srv.Err(); err != nil {
		t.Fatal(err)
	}
	if o := out.String(); !strings.Contains(o, "looking \uFFFD[2J first\n") || strings.Contains(o, "\x1b") {
		t.Fatalf("output:\n%q", o)
	}
}

// --stream --eager runs a completed call while the response is still
// arriving: the server holds the stream after the call until the desktop
// received its action.
func TestRunStreamEager(t *testing.T) {
	var d *desktop
	turn := respserver.Items(respserver.ComputerCall(`{"type":"keypress","keys":["a"]}`), respserver.Message("pressed", "commentary"))
	turn.Stream.AfterItem = func(i int) error {
		if i != 0 {
			return nil
		}
		deadline := time.Now().Add(time.Minute)
		for time.Now().Before(deadline) {
			d.mu.Lock()
			n := len(d.actions)
			d.mu.Unlock()
			if n > 0 {
				return nil
			}
			time.Sleep(10 * time.Millisecond)
		}
		return errors.New("the call did not run while the stream was held")
	}
	srv, dd, dir := harness(t, turn, respserver.Final("all done"))
	d = dd
	var out, errOut bytes.Buffer
	err := runCommand(context.Background(), []string{"--guest", "127.0.0.1:7000", "--record-dir", dir, "--stream", "--eager", "press a"}, devNull(t), &out, &errOut)
	if err != nil {
		t.Fatalf("%v\n%s%s", err, out.String(), errOut.String())
	}
	if err := srv.Err(); err != nil {
		t.Fatal(err)
	}
}

// --eager without --stream is refused with a clear error.
func TestRunEagerNeedsStream(t *testing.T) {
	_, _, dir := harness(t, respserver.Final("all done"))
	var out, errOut bytes.Buffer
	err := runCommand(context.Background(), []string{"--guest", "127.0.0.1:7000", "--record-dir", dir, "--eager", "look"}, devNull(t), &out, &errOut)
	if err == nil || !strings.Contains(err.Error(), "--eager needs --stream") {
		t.Fatalf("err %v", err)
	}
}
