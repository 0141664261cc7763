package exercise

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"strings"
	"time"

	"github.com/agentd-dev/agentd/guest"
	"github.com/agentd-dev/agentd/runner"
	"github.com/agentd-dev/agentd/runner/codetool"
	"github.com/agentd-dev/agentd/scaling"
	"github.com/agentd-dev/agentd/tools/exercise/desktop"
	"github.com/agentd-dev/agentd/tools/respserver"
)

// CodeScript is the scripted model of code mode: the same task in Python
// over three exec_py calls. The first defines a helper and the values, the
// second fills and submits the form with them, the third writes and saves
// the note held in a variable of the first. Coordinates are in the image
// space of ModelView, as a model reads them off display(screenshot()).
func CodeScript() ([]respserver.Turn, error) {
	t, err := scaling.New(scaling.Size{W: desktop.ScreenWidth, H: desktop.ScreenHeight}, nil, ModelView.Width, ModelView.Height, true)
	if err != nil {
		return nil, err
	}
	var firstErr error
	at := func(sx, sy int) string {
		x, y, err := t.ToImage(sx, sy)
		if err != nil && firstErr == nil {
			firstErr = err
		}
		return fmt.Sprintf("%d, %d", x, y)
	}
	call := func(code string) respserver.Turn {
		args, _ := json.Marshal(map[string]string{"code": code})
		return respserver.Items(respserver.FunctionCall(codetool.Name, string(args)))
	}
	turns := []respserver.Turn{
		call(fmt.Sprintf(`name = %q
date = %q
note = %q

def fill(x, y, text):
    pyautogui.click(x, y)
    pyautogui.write(text)

display(pyautogui.screenshot())
log("screen", pyautogui.size())
`, PickupName, PickupDate, NoteText)),
		call(fmt.Sprintf(`fill(%s, name)
fill(%s, date)
pyautogui.click(%s)  # the Afternoon slot
pyautogui.click(%s)  # fragile
pyautogui.click(%s)  # submit
pyautogui.settle()
display(pyautogui.screenshot())
`, at(desktop.NameFieldX, desktop.NameFieldY), at(desktop.DateFieldX, desktop.DateFieldY), at(desktop.SlotOptionX, desktop.SlotAfternoonY), at(desktop.FragileX, desktop.FragileY), at(desktop.SubmitX, desktop.SubmitY))),
		// The window manager moves the focus asynchronously: settle first.
		call(fmt.Sprintf(`pyautogui.click(%s)
pyautogui.settle()
pyautogui.write(note)
pyautogui.hotkey("ctrl", "s")
pyautogui.settle()
log("saved", len(note), "characters for", name)
`, at(desktop.EditorTextX, desktop.EditorTextY))),
		respserver.Final("The pickup is booked and the note is saved."),
	}
	if firstErr != nil {
		return nil, fmt.Errorf("exercise code script: %w", firstErr)
	}
	return turns, nil
}

// driveCode runs the code-mode script against the guest through the
// runner's exec_py tool. A call that raised or lost its namespace fails the
// exercise: the later calls depend on the first one's variables.
func driveCode(ctx context.Context, client *guest.Client, out io.Writer, cfg RunConfig, rep *Report) error {
	// The view reaches agentd with a screenshot.
	if _, err := client.Screenshot(ctx); err != nil {
		return fmt.Errorf("exercise: set the view: %w", err)
	}
	turns, err := CodeScript()
	if err != nil {
		return err
	}
	var bad []string
	tool := codetool.New(client, codetool.Options{BeforeCode: func(_ context.Context, c codetool.CallInfo) (any, error) {
		rep.BeforeAction++
		fmt.Fprintf(out, "  before_code %s: %d bytes of Python → approved\n", c.CallID, len(c.Code))
		return true, nil
	}})
	_, err = scriptedRun{
		turns:  turns,
		suffix: "-exercise-code",
		model:  "computer-use-exercise-code",
		input:  "Book a pickup for Zoë Ñúñez-Łukasz on 2025-03-14 in the afternoon, marked fragile, then note it in the editor and save.",
		tool:   tool,
		onEvent: func(ev runner.Event) {
			if ev.Kind != runner.EventCode {
				return
			}
			rep.Actions++
			c := ev.Code
			fmt.Fprintf(out, "  exec_py %d lines: %d bytes of output, %d images, %s\n", c.Lines, c.OutputBytes, c.Images, time.Duration(ev.Duration).Round(time.Millisecond))
			if c.Raised || c.Lost {
				bad = append(bad, fmt.Sprintf("call %s raised=%v namespace lost=%v", ev.CallID, c.Raised, c.Lost))
			}
		},
	}.run(ctx, cfg, rep, out)
	if err != nil {
		return err
	}
	if len(bad) > 0 {
		return errors.New("exercise: code calls failed: " + strings.Join(bad, "; "))
	}
	return nil
}
