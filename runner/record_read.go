package runner

import (
	"bufio"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"strconv"
	"time"
)

// RecordLine is one line of a record's events.jsonl, as any version
// wrote it: the header (Kind "record", Version), an Event, a note of the
// caller's (Kind and Data, see Record.Note) or the end line (End).
type RecordLine struct {
	Event
	// Version is the header line's format version (0 on other lines).
	Version int
	// Data is a note's data, to decode into the note's own type.
	Data json.RawMessage
	// End is set on the end line (Kind "end").
	End *RecordEnd
}

// RecordEnd is the last line of a record: how the run ended.
type RecordEnd struct {
	Kind             string    `json:"kind"` // "end"
	Time             time.Time `json:"time"`
	OK               bool      `json:"ok"`
	FinalMessage     string    `json:"final_message,omitempty"`
	Error            string    `json:"error,omitempty"`
	ResponseID       string    `json:"response_id,omitempty"`
	Steps            int       `json:"steps"`
	AttemptedCallIDs []string  `json:"attempted_call_ids,omitempty"`
	CompletedCallIDs []string  `json:"completed_call_ids"`
	Usage            Totals    `json:"usage"`
	Duration         Duration  `json:"duration,omitempty"`
}

// UnmarshalJSON reads a line of any kind.
func (l *RecordLine) UnmarshalJSON(data []byte) error {
	type event Event // without this method
	var head struct {
		Kind    EventKind       `json:"kind"`
		Version int             `json:"version"`
		Data    json.RawMessage `json:"data"`
	}
	if err := json.Unmarshal(data, &head); err != nil {
		return err
	}
	*l = RecordLine{Version: head.Version, Data: head.Data}
	if head.Kind == "end" {
		l.End = &RecordEnd{}
		if err := json.Unmarshal(data, l.End); err != nil {
			return err
		}
		l.Kind, l.Time = head.Kind, l.End.Time
		return nil
	}
	return json.Unmarshal(data, (*event)(&l.Event))
}

// UnmarshalJSON reads a number of seconds (MarshalJSON's form).
func (d *Duration) UnmarshalJSON(data []byte) error {
	s, err := strconv.ParseFloat(string(data), 64)
	if err != nil {
		return fmt.Errorf("duration %s: %w", data, err)
	}
	*d = Duration(s * float64(time.Second))
	return nil
}

// maxRecordLine bounds one line of a record (a long final message fits).
const maxRecordLine = 16 << 20

// ReadRecord reads the lines of a record's events.jsonl in order, each
// given to each: the one reader of every record version (see Record).
// A line that does not decode is skipped, since a crash may tear the line
// it was writing and a resumed run appends after it; but if the first
// line does not, r holds no record and ReadRecord fails. An error of each
// stops the reading and is returned.
func ReadRecord(r io.Reader, each func(*RecordLine) error) error {
	sc := bufio.NewScanner(r)
	sc.Buffer(make([]byte, 64<<10), maxRecordLine)
	n := 0
	for sc.Scan() {
		n++
		var l RecordLine
		if err := json.Unmarshal(sc.Bytes(), &l); err != nil {
			if n == 1 {
				return fmt.Errorf("not a run record: line 1: %w", err)
			}
			continue
		}
		if err := each(&l); err != nil {
			return err
		}
	}
	switch err := sc.Err(); {
	case errors.Is(err, bufio.ErrTooLong):
		// A line too long for any reader ends what can be read.
	case err != nil:
		return fmt.Errorf("run record: %w", err)
	}
	if n == 0 {
		return errors.New("run record: empty")
	}
	return nil
}
