package exercise

import (
	"context"
	"encoding/json"
	"io/fs"
	"strings"
	"testing"
	"time"

	"github.com/agentd-dev/agentd/actions"
	"github.com/agentd-dev/agentd/tools/exercise/desktop"
	"github.com/agentd-dev/agentd/tools/exercise/form"
)

func TestVerify(t *testing.T) {
	if err := verify(nil, nil); err == nil || !strings.Contains(err.Error(), "want exactly 1 record, found 0") {
		t.Fatalf("empty desktop: %v", err)
	}
	wrong := []form.Record{{Name: PickupName, Date: PickupDate, Slot: "Evening"}}
	err := verify(wrong, []byte(strings.TrimSuffix(NoteText, "\n")))
	for _, want := range []string{`slot "Evening", want "Afternoon"`, "not marked fragile", "saved note is"} {
		if err == nil || !strings.Contains(err.Error(), want) {
			t.Errorf("verify = %v, want it to say %q", err, want)
		}
	}
	if err != nil && strings.Contains(err.Error(), "record name") {
		t.Errorf("the right name was reported as wrong: %v", err)
	}
	right := []form.Record{{Name: PickupName, Date: PickupDate, Slot: PickupSlot, Fragile: true}}
	if err := verify(right, []byte(NoteText)); err != nil {
		t.Fatalf("the right results: %v", err)
	}
}

// TestScriptIsValidModelOutput: every scripted action passes the strict
// decoder the runner applies to a real model's output.
func TestScriptIsValidModelOutput(t *testing.T) {
	turns, err := Script()
	if err != nil {
		t.Fatal(err)
	}
	if len(turns[2].SafetyChecks) != 1 || turns[0].Items[0]["name"] != LookupName || turns[len(turns)-1].Message == "" {
		t.Fatalf("script shape: %+v", turns)
	}
	for i, turn := range turns {
		for _, a := range turn.Actions {
			if _, err := actions.Decode(a); err != nil {
				t.Errorf("turn %d: %s: %v", i, a, err)
			}
		}
	}
}

// lateDesktop is a guest whose form record arrives after a few reads, as
// when Firefox sends the form seconds after the run's last action.
type lateDesktop struct {
	reads, recordAt int
}

func (d *lateDesktop) ReadFile(_ context.Context, rel string) ([]byte, error) {
	switch rel {
	case desktop.RemoteNote:
		return []byte(NoteText), nil
	case desktop.RemoteRecords:
		d.reads++
		if d.recordAt == 0 || d.reads < d.recordAt {
			return nil, fs.ErrNotExist
		}
		return json.Marshal(form.Record{Name: PickupName, Date: PickupDate, Slot: PickupSlot, Fragile: true})
	}
	return nil, fs.ErrNotExist
}

// TestVerifyWaitsForTheDesktop: a record that arrives late passes; one that
// never arrives fails once the bound has passed, saying what is missing.
func TestVerifyWaitsForTheDesktop(t *testing.T) {
	late := &lateDesktop{recordAt: 3}
	if err := verifyWithin(context.Background(), late, time.Minute); err != nil || late.reads != 3 {
		t.Fatalf("a record arriving at the third read: %v after %d reads", err, late.reads)
	}
	never := &lateDesktop{}
	err := verifyWithin(context.Background(), never, 600*time.Millisecond)
	if err == nil || !strings.Contains(err.Error(), "read records") || never.reads < 2 {
		t.Fatalf("a record that never arrives: %v after %d reads, want the read error after reading again", err, never.reads)
	}
}
