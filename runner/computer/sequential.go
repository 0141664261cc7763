package computer

import (
	"context"
	"errors"
	"fmt"

	"github.com/agentd-dev/agentd/actions"
)

// Stepper is the simplest desktop: one action at a time, and a screenshot.
type Stepper interface {
	// Do performs one action, its coordinates in the image space of the
	// last screenshot; a result that is not OK is a failure.
	Do(ctx context.Context, a actions.Action) (ActionResult, error)
	Screenshot(ctx context.Context) (Screenshot, error)
}

// Sequential is the Driver of a Stepper: one Do per action (a screenshot
// action takes a screenshot that is not returned), then the final
// screenshot, each step asked of Hooks.Before first.
func Sequential(s Stepper) Driver { return sequential{s} }

type sequential struct{ s Stepper }

func (q sequential) Run(ctx context.Context, as []actions.Action, h Hooks) (Screenshot, error) {
	for i, a := range as {
		if err := q.begin(ctx, h, Step{Index: i}); err != nil {
			return Screenshot{}, err
		}
		var r ActionResult
		var err error
		if a.Type == actions.Screenshot {
			_, err = q.s.Screenshot(ctx)
			r = ActionResult{Type: string(a.Type), OK: err == nil}
		} else {
			r, err = q.s.Do(ctx, a)
			if err == nil && !r.OK {
				err = errors.New(r.Error)
				if r.Error == "" {
					err = errors.New("the driver reported a failure without a reason")
				}
			}
		}
		r.Index = i
		if err != nil {
			r.OK = false
			if r.Error == "" {
				r.Error = err.Error()
			}
		}
		if h.Done != nil {
			h.Done(r)
		}
		if err != nil {
			return Screenshot{}, err
		}
	}
	if err := q.begin(ctx, h, Step{Index: len(as), Final: true}); err != nil {
		return Screenshot{}, err
	}
	return q.s.Screenshot(ctx)
}

// begin checks that the call is still wanted before a step: not cancelled,
// and approved by Before.
func (q sequential) begin(ctx context.Context, h Hooks, s Step) error {
	if err := ctx.Err(); err != nil {
		return fmt.Errorf("cancelled before step %d: %w", s.Index, err)
	}
	if h.Before != nil {
		return h.Before(ctx, s)
	}
	return nil
}
