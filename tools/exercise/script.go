package exercise

import (
	"context"
	"encoding/json"
	"fmt"

	"github.com/agentd-dev/agentd/runner"
	"github.com/agentd-dev/agentd/scaling"
	"github.com/agentd-dev/agentd/tools/exercise/desktop"
	"github.com/agentd-dev/agentd/tools/respserver"
)

// The values the scripted model enters; Verify checks the desktop for them.
const (
	PickupName = "Zoë Ñúñez-Łukasz"
	PickupDate = "2025-03-14"
	PickupSlot = "Afternoon"
	// NoteText is typed into the editor and must be saved byte for byte.
	NoteText = "Pickup booked for Zoë Ñúñez-Łukasz.\nSlot: Afternoon, fragile ✓\nThanks — the agentd exercise\n"
)

// PickupReference is the booking the task names; LookupPickup returns its
// details, which the model then enters in the form.
const PickupReference = "PU-1042"

// Task is what the model is asked to do, scripted or live. It gives the
// note word for word: the saved file is checked byte for byte.
const Task = "Look up booking " + PickupReference + " with lookup_pickup, book its pickup in the form (name, date, slot, fragile) and submit it, then type this note in the editor exactly as given and save it with Ctrl+S:\n" + NoteText

// LookupName is the host function the model calls first.
const LookupName = "lookup_pickup"

type lookupArgs struct {
	Reference string `json:"reference" jsonschema:"the booking reference, for example PU-1042"`
}

// LookupPickup is the exercise's host function: the pickup details of a
// booking, as JSON text, for the model to fill the form with.
func LookupPickup() (*runner.Function, error) {
	return runner.NewFunction(LookupName, "Look up the pickup details (name, date, slot, fragile) of a booking.",
		func(_ context.Context, a lookupArgs) (runner.Output, error) {
			if a.Reference != PickupReference {
				return runner.Text(`{"error":"no such booking"}`), nil
			}
			return runner.Text(mustJSON(map[string]any{"reference": a.Reference, "name": PickupName,
				"date": PickupDate, "slot": PickupSlot, "fragile": true})), nil
		})
}

// ModelView is what the scripted model sees: the 1440×900 screen fitted
// into 1280×800, so every coordinate goes through the scaling path.
var ModelView = struct{ Width, Height int }{1280, 800}

// SubmitCheck is the pending safety check on the call that submits the form.
var SubmitCheck = respserver.SafetyCheck{
	ID:      "sc_exercise_submit",
	Code:    "confirm_submission",
	Message: "The model is about to submit a form that books a pickup.",
}

// Script is the scripted model: its turns, in order, with coordinates in
// the image space of ModelView.
func Script() ([]respserver.Turn, error) {
	t, err := scaling.New(scaling.Size{W: desktop.ScreenWidth, H: desktop.ScreenHeight}, nil, ModelView.Width, ModelView.Height, true)
	if err != nil {
		return nil, err
	}
	var firstErr error
	// at maps a screen point of the layout to the model's image.
	at := func(sx, sy int) (int, int) {
		x, y, err := t.ToImage(sx, sy)
		if err != nil && firstErr == nil {
			firstErr = err
		}
		return x, y
	}
	click := func(sx, sy int) string {
		x, y := at(sx, sy)
		return mustJSON(map[string]any{"type": "click", "button": "left", "x": x, "y": y})
	}
	typ := func(text string) string { return mustJSON(map[string]any{"type": "type", "text": text}) }
	keys := func(k ...string) string { return mustJSON(map[string]any{"type": "keypress", "keys": k}) }
	wait := `{"type":"wait"}`
	image := scaling.Size{W: t.Image.W, H: t.Image.H}

	turns := []respserver.Turn{
		// Ask the host for the booking's details, and look, as models do.
		respserver.Items(respserver.FunctionCall(LookupName, `{"reference":"`+PickupReference+`"}`),
			respserver.ComputerCall(`{"type":"screenshot"}`)),
		// Fill the form with what the lookup returned.
		respserver.Call(
			click(desktop.NameFieldX, desktop.NameFieldY), typ(PickupName),
			click(desktop.DateFieldX, desktop.DateFieldY), typ(PickupDate),
			click(desktop.SlotOptionX, desktop.SlotAfternoonY),
			click(desktop.FragileX, desktop.FragileY),
		),
		// Submitting books a pickup: the model's call carries a safety check.
		func() respserver.Turn {
			turn := respserver.Call(click(desktop.SubmitX, desktop.SubmitY), wait)
			turn.SafetyChecks = []respserver.SafetyCheck{SubmitCheck}
			return turn
		}(),
		// Switch to the editor; the window manager moves the focus
		// asynchronously, so wait before typing.
		respserver.Call(click(desktop.EditorTextX, desktop.EditorTextY), wait, typ(NoteText), keys("CTRL", "S"), wait),
		respserver.Final("The pickup is booked and the note is saved."),
	}
	for i := 1; i < len(turns); i++ {
		turns[i].ExpectImage = image
	}
	if firstErr != nil {
		return nil, fmt.Errorf("exercise script: %w", firstErr)
	}
	return turns, nil
}

func mustJSON(v any) string {
	b, err := json.Marshal(v)
	if err != nil {
		panic(err) // only maps of strings and numbers are marshalled
	}
	return string(b)
}
