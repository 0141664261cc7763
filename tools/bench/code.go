package bench

import (
	"context"
	"fmt"
	"image"
	"os/exec"
	"time"

	"github.com/agentd-dev/agentd/actions/wire"
	"github.com/agentd-dev/agentd/tools/bench/probe"
)

// Code-mode figure IDs.
const (
	idExecEmpty = "exec-empty"
	idExecClick = "exec-click"
)

// codeMissing says why code mode cannot be measured; "" when it can (the
// guest's agentd then runs with --code).
func codeMissing() string {
	if err := exec.Command(wire.DefaultCodePython, "-I", "-c", "import PIL.Image").Run(); err != nil {
		return "not measured: needs Debian's python3 and python3-pil"
	}
	return ""
}

// codeContenders time an empty exec, and an exec of pyautogui.click until
// the desktop saw the release: measured in the same rounds as the native
// click, so the difference is what code mode adds.
func (b *sizeBench) codeContenders(next func() image.Point,
	roundTrip func(context.Context, string, func(context.Context) error, func(probe.Event) bool) (time.Duration, error),
	at func(string, image.Point) func(probe.Event) bool) []contender {
	if b.codeMissing != "" {
		return nil
	}
	return []contender{
		{id: idExecEmpty, run: func(ctx context.Context) (time.Duration, error) {
			start := time.Now()
			if _, err := b.client.Exec(ctx, "", 0); err != nil {
				return 0, err
			}
			return time.Since(start), nil
		}},
		{id: idExecClick, run: func(ctx context.Context) (time.Duration, error) {
			p := next()
			return roundTrip(ctx, "button release", func(ctx context.Context) error {
				// PAUSE = 0: pyautogui's own 0.1 s pause after each call
				// is not agentd's cost.
				res, err := b.client.Exec(ctx, fmt.Sprintf("pyautogui.PAUSE = 0\npyautogui.click(%d, %d)", p.X, p.Y), 0)
				if err == nil && res.Traceback != "" {
					err = fmt.Errorf("pyautogui.click raised: %s", res.Traceback)
				}
				return err
			}, at(probe.ButtonRelease, p))
		}},
	}
}

// codeFigures are the code-mode figures; click is the native click of the
// same rounds.
func (b *sizeBench) codeFigures(res roundsResult, click Figure) []Figure {
	empty := timeFigure(idExecEmpty, "exec round trip, empty call (code mode)", res.samples[idExecEmpty])
	pyClick := timeFigure(idExecClick, "pyautogui.click round trip (exec → event at the window)", res.samples[idExecClick])
	if b.codeMissing != "" {
		empty.Missing, pyClick.Missing = b.codeMissing, b.codeMissing
		return []Figure{empty, pyClick}
	}
	if click.N > 0 && pyClick.N > 0 {
		pyClick.Note = fmt.Sprintf("%+.2f ms over the native click at p50", pyClick.P50-click.P50)
	}
	return []Figure{empty, pyClick}
}
