package mcpserver

import (
	"sync"

	"github.com/agentd-dev/agentd/runner"
)

// journal writes a session's run record off the answer path, in order.
//
// Creating a call's screenshot file was the largest part of the server's
// own time per call, so a call's record lines and files are written by
// the journal's goroutine while its answer goes out, and the file itself
// is made when the call starts (Record.PrepareShot), while the guest
// works. One writer takes them first in, first written: the record's order
// is the calls'. A call starts
// only once every line of the calls before it is written (session.begin),
// and the session's end line comes after the last: a crash loses at most
// the lines of the last call answered that were not written yet, and those
// of the call in progress.
type journal struct {
	rec     *runner.Record
	lines   chan runner.Event
	pending sync.WaitGroup // lines added and not yet written
	stopped chan struct{}
}

// journalLines bounds the lines waiting to be written: a call that
// outruns the disk waits for it.
const journalLines = 64

func newJournal(rec *runner.Record) *journal {
	j := &journal{rec: rec, lines: make(chan runner.Event, journalLines), stopped: make(chan struct{})}
	// The writer's owner is the journal: finish ends it.
	go func() {
		defer close(j.stopped)
		for e := range j.lines {
			j.rec.Event(e)
			j.pending.Done()
			if e.Kind == runner.EventRequest {
				// A call has started: its screenshot's file is made
				// while the guest works, not while its answer goes out.
				j.rec.PrepareShot()
			}
		}
	}()
	return j
}

// add queues e for writing. Its parts are copied: a sender may change
// them once added (an approval asked, then answered).
func (j *journal) add(e runner.Event) {
	e.Usage = clone(e.Usage)
	e.Action = clone(e.Action)
	e.Approval = clone(e.Approval)
	e.Screenshot = clone(e.Screenshot)
	e.Code = clone(e.Code)
	e.Function = clone(e.Function)
	e.Takeover = clone(e.Takeover)
	j.pending.Add(1)
	j.lines <- e
}

func clone[T any](p *T) *T {
	if p == nil {
		return nil
	}
	c := *p
	return &c
}

// wait returns once every line added is written. Only the session's call
// in progress (or its end) adds and waits, never two at once.
func (j *journal) wait() { j.pending.Wait() }

// finish writes the end line after every other, closes the record and
// returns the first error met while writing it.
func (j *journal) finish(res *runner.RunResult) error {
	close(j.lines)
	<-j.stopped
	return j.rec.Finish(res, nil)
}
