package exercise

import (
	"strings"
	"testing"

	"github.com/agentd-dev/agentd/internal/prereq"
)

// TestBrowserModeExercise runs the exercise in browser mode on a local
// guest: the scripted model reads the form through agentd's Chromium,
// fills and submits it with confirmed type, select_option and click calls,
// and its navigation to a lookalike host is refused by the URL policy; the
// record is checked as in the other modes.
func TestBrowserModeExercise(t *testing.T) {
	prereq.Programs(t, prereq.X, "Xvfb", "openbox", "firefox-esr", "mousepad", "chromium")
	prereq.Full(t, "starting Firefox and Chromium")
	rep, out := runLocal(t, RunConfig{Browser: true})
	// navigate, read_page, five changes, the refused navigate; every change
	// and the allowed navigate confirmed.
	if rep.Steps != 5 || rep.Actions != 8 || rep.BeforeAction != 6 {
		t.Fatalf("steps %d, browser calls %d, confirms %d; want 5, 8, 6\n%s", rep.Steps, rep.Actions, rep.BeforeAction, out.String())
	}
	if !strings.Contains(out.String(), "evil.test") || !strings.Contains(out.String(), "allowed=false") {
		t.Errorf("the lookalike navigation was not refused by the policy:\n%s", out.String())
	}
}

// The lookalike host starts like the form's and is another host.
func TestLookalike(t *testing.T) {
	got, err := lookalike("http://127.0.0.1:8080/")
	if err != nil || got != "http://127.0.0.1.evil.test:8080/" {
		t.Fatalf("lookalike = %q, %v", got, err)
	}
}
