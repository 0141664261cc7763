package exercise

import (
	"strings"
	"testing"

	"github.com/agentd-dev/agentd/actions"
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
