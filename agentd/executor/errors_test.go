package executor

import (
	"context"
	"errors"
	"fmt"
	"strings"
	"testing"

	"github.com/agentd-dev/agentd/actions"
	"github.com/agentd-dev/agentd/agentd/input"
)

// TestPublicMessages: what Do's errors offer a client says what failed and
// never what the device said.
func TestPublicMessages(t *testing.T) {
	const detail = "X error 8 (BadMatch) on :77, request 132.2"
	for _, tc := range []struct {
		name   string
		fail   error // the device's error at its second call
		action actions.Action
		want   string
	}{
		{"device failure", errors.New(detail), actions.Action{Type: actions.Click, X: 1, Y: 1},
			"click: move to (1,1) failed"},
		{"display lost", fmt.Errorf("%w: %s", input.ErrDisplayLost, detail), actions.Action{Type: actions.Move, X: 2, Y: 3},
			"move: move to (2,3): X display lost"},
		{"refused action", nil, actions.Action{Type: actions.Click, X: 900, Y: 1},
			"click: point (900,1) is off the 800x600 screen"},
		{"invalid action", nil, actions.Action{Type: actions.Keypress},
			"keypress: keys is empty"},
	} {
		t.Run(tc.name, func(t *testing.T) {
			in := input.NewFake(800, 600)
			if tc.fail != nil {
				in.FailAt(2, tc.fail)
			}
			_, err := New(in, Options{}).Do(context.Background(), tc.action)
			var e *Error
			if !errors.As(err, &e) {
				t.Fatalf("err = %v (%T), want an *Error", err, err)
			}
			if got := e.Public(); got != tc.want {
				t.Fatalf("Public() = %q, want %q", got, tc.want)
			}
			if tc.fail != nil && !strings.Contains(err.Error(), detail) {
				t.Fatalf("the log message %q lost the detail", err)
			}
		})
	}
}
