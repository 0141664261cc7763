package desktop

import (
	"context"
	"fmt"
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/agentd-dev/agentd/internal/prereq"
	"github.com/agentd-dev/agentd/tools/exercise/form"

	"github.com/agentd-dev/agentd/actions"
	"github.com/agentd-dev/agentd/guest"
	"github.com/agentd-dev/agentd/internal/agentdtest"
	"github.com/agentd-dev/agentd/local"
)

// requireBrowserDesktop ends the test as prereq does when a program of the
// exercise desktop is missing.
func requireBrowserDesktop(t *testing.T) {
	t.Helper()
	prereq.Programs(t, prereq.X, "Xvfb", "openbox", "firefox-esr", "mousepad")
}

// TestTypingThroughAgentd fills in the form in Firefox through the real
// agentd in ONE batch, as a model does: click the name field, type a name
// whose characters are missing from the keyboard map, click the date field,
// type the date (plain ASCII right after a click), choose a slot, tick
// Fragile, submit. Nothing is preloaded into the keyboard map: agentd binds
// the missing characters itself. Before agentd waited for the window
// manager to let each click through (openbox's click-to-focus binding
// freezes the pointer after a press), the text overtook the clicks: the
// name went to the page body, the date into the name field, and the slot
// click landed on Submit.
//
// Set EXERCISE_SCREENSHOTS to a directory to keep a screenshot of a
// failure.
func TestTypingThroughAgentd(t *testing.T) {
	requireBrowserDesktop(t)
	prereq.Full(t, "starting Firefox")
	agentd := agentdtest.Binary(t)
	dir := t.TempDir()
	desk, err := Prepare(Config{Dir: filepath.Join(dir, "exercise")})
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { _ = desk.Close() }) // runs after the guest's Down below
	cfg := local.Config{
		StateDir:   filepath.Join(dir, "desktop"),
		AgentdPath: agentd,
		KeepLogs:   true,
	}
	desk.Configure(&cfg)

	ctx, cancel := context.WithTimeout(context.Background(), 4*time.Minute)
	defer cancel()
	start := time.Now()
	g, err := local.Up(ctx, cfg)
	if err != nil {
		t.Fatalf("Up: %v", err)
	}
	t.Logf("desktop up on %s in %v", g.Display, time.Since(start).Round(time.Millisecond))
	t.Cleanup(func() {
		_ = g.Down(context.Background())
		if t.Failed() {
			if log, err := os.ReadFile(filepath.Join(g.StateDir, "logs", "agentd.log")); err == nil {
				t.Logf("agentd log:\n%s", log)
			}
		}
		_ = os.RemoveAll(g.StateDir)
	})
	// The browser starts focused; a model's first click would not wait
	// for that either, but the window manager must have given it.
	waitFocus(t, g, BrowserClass)

	token, err := os.ReadFile(g.TokenFile)
	if err != nil {
		t.Fatal(err)
	}
	c, err := guest.Dial(ctx, g.Addr, strings.TrimSpace(string(token)))
	if err != nil {
		t.Fatalf("dial agentd: %v", err)
	}
	defer c.Close()

	click := func(x, y int) actions.Action { return actions.Action{Type: actions.Click, X: x, Y: y} }
	name, date := "Zoë Ñúñez-Łukasz", "2025-03-14"
	batch := []actions.Action{
		click(NameFieldX, NameFieldY), {Type: actions.TypeText, Text: name},
		click(DateFieldX, DateFieldY), {Type: actions.TypeText, Text: date},
		click(SlotOptionX, SlotAfternoonY),
		click(FragileX, FragileY),
		click(SubmitX, SubmitY),
	}
	start = time.Now()
	if res, err := c.Batch(ctx, batch, nil); err != nil {
		t.Fatalf("batch: %v (results %+v)", err, res.Results)
	}
	t.Logf("batch of %d actions in %v", len(batch), time.Since(start).Round(time.Millisecond))
	if !checkRecords(t, desk, []form.Record{{Name: name, Date: date, Slot: "Afternoon", Fragile: true}}) {
		saveScreenshot(ctx, t, c, "typing-failed")
	}
}

// saveScreenshot saves the screen as $EXERCISE_SCREENSHOTS/<name>.png.
func saveScreenshot(ctx context.Context, t *testing.T, c *guest.Client, name string) {
	dir := os.Getenv("EXERCISE_SCREENSHOTS")
	if dir == "" {
		return
	}
	s, err := c.Screenshot(ctx)
	if err != nil {
		t.Logf("screenshot: %v", err)
		return
	}
	p := filepath.Join(dir, fmt.Sprintf("%s-%d.png", name, time.Now().UnixMilli()))
	if err := os.WriteFile(p, s.PNG, 0o644); err == nil {
		t.Logf("screenshot %s", p)
	}
}

// checkRecords waits for the record file to hold len(want) records and
// compares them (SavedAt aside). A form submitted with an empty required
// field is never sent, so "no new record" means a field stayed empty.
func checkRecords(t *testing.T, desk *Desktop, want []form.Record) bool {
	t.Helper()
	var got []form.Record
	deadline := time.Now().Add(20 * time.Second)
	for time.Now().Before(deadline) {
		if r, err := desk.Record.Records(); err == nil && len(r) >= len(want) {
			got = r
			break
		}
		time.Sleep(100 * time.Millisecond)
	}
	if len(got) != len(want) {
		r, _ := desk.Record.Records()
		t.Errorf("%d records, want %d (a required field left empty, so the form was not sent?): got %+v", len(r), len(want), r)
		return false
	}
	ok := true
	for i := range want {
		g := got[i]
		g.SavedAt = time.Time{}
		if g != want[i] {
			t.Errorf("record %d = %+v, want %+v", i+1, g, want[i])
			ok = false
		}
	}
	return ok
}
