package exercise

import (
	"net/url"
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/agentd-dev/agentd/actions"
)

func TestVerify(t *testing.T) {
	d, err := Prepare(Config{Dir: filepath.Join(t.TempDir(), "desktop")})
	if err != nil {
		t.Fatal(err)
	}
	defer d.Close()
	if err := Verify(d); err == nil || !strings.Contains(err.Error(), "want exactly 1 record, found 0") {
		t.Fatalf("empty desktop: %v", err)
	}
	submit(t, d.Record, url.Values{"name": {PickupName}, "date": {PickupDate}, "slot": {"Evening"}})
	if err := os.WriteFile(d.NoteFile, []byte(strings.TrimSuffix(NoteText, "\n")), 0o600); err != nil {
		t.Fatal(err)
	}
	err = Verify(d)
	for _, want := range []string{`slot "Evening", want "Afternoon"`, "not marked fragile", "saved note is"} {
		if err == nil || !strings.Contains(err.Error(), want) {
			t.Errorf("Verify = %v, want it to say %q", err, want)
		}
	}
	if err != nil && strings.Contains(err.Error(), "record name") {
		t.Errorf("the right name was reported as wrong: %v", err)
	}

	d2, err := Prepare(Config{Dir: filepath.Join(t.TempDir(), "desktop")})
	if err != nil {
		t.Fatal(err)
	}
	defer d2.Close()
	submit(t, d2.Record, url.Values{"name": {PickupName}, "date": {PickupDate}, "slot": {PickupSlot}, "fragile": {"yes"}})
	if err := os.WriteFile(d2.NoteFile, []byte(NoteText), 0o600); err != nil {
		t.Fatal(err)
	}
	if err := Verify(d2); err != nil {
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
	if len(turns[2].SafetyChecks) != 1 || turns[len(turns)-1].Message == "" {
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
