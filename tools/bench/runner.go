package bench

import (
	"context"
	"fmt"
	"sync"
	"time"

	"github.com/openai/openai-go/v3"
	"github.com/openai/openai-go/v3/option"

	"github.com/agentd-dev/agentd/actions"
	"github.com/agentd-dev/agentd/actions/wire"
	"github.com/agentd-dev/agentd/internal/bareloop"
	"github.com/agentd-dev/agentd/runner"
	"github.com/agentd-dev/agentd/runner/computer"
	"github.com/agentd-dev/agentd/tools/respserver"
)

const (
	idRunnerOverhead = "runner-overhead"
	idBareLoop       = "bare-sdk-loop-overhead"
	// runnerSteps is how many 3-action steps the runner figure times.
	runnerSteps = 100
)

// timedDriver adds up the time spent inside the driver: agentd and its
// channel.
type timedDriver struct {
	computer.Driver
	mu    sync.Mutex
	spent time.Duration
}

func (d *timedDriver) Run(ctx context.Context, as []actions.Action, h computer.Hooks) (computer.Screenshot, error) {
	start := time.Now()
	shot, err := d.Driver.Run(ctx, as, h)
	d.mu.Lock()
	d.spent += time.Since(start)
	d.mu.Unlock()
	return shot, err
}

func (d *timedDriver) take() time.Duration {
	d.mu.Lock()
	defer d.mu.Unlock()
	t := d.spent
	d.spent = 0
	return t
}

// measureRunner times the runner's own cost per step: a scripted model
// (respserver, through the real SDK) asks for runnerSteps calls of three
// mouse moves, the screen fitted into 1280×800; each step's wall time (one
// request to the next) minus the model server's own time and the driver's
// (agentd and its channel) is what the runner and the SDK add: validation,
// events, the screenshot's base64 and the request's JSON. Its peer, in the
// same run, is a bare openai-go loop over the same steps that only decodes
// the actions, runs them and sends the screenshot back: the ratio is what
// the runner's checks cost beyond the SDK's own work.
func (b *sizeBench) measureRunner(ctx context.Context) ([]Figure, error) {
	b.client.SetView(wire.View{Width: 1280, Height: 800, Fit: true})
	defer b.client.SetView(nativeView)
	turns := bareloop.Turns(runnerSteps)
	srv, url := respserver.Start(turns...)
	defer srv.Close()

	d := &timedDriver{Driver: b.client}
	ts := runner.New(openai.NewClient(option.WithBaseURL(url), option.WithAPIKey("bench"), option.WithMaxRetries(0)), d)
	defer ts.Close()
	var (
		stepStart time.Time
		walls     []time.Duration
		driver    []time.Duration
	)
	_, err := ts.Run(ctx, runner.RunOptions{Model: "bench", Input: "move the mouse", MaxSteps: len(turns),
		OnEvent: func(e runner.Event) {
			if e.Kind != runner.EventRequest {
				return
			}
			if !stepStart.IsZero() {
				walls = append(walls, e.Time.Sub(stepStart))
				driver = append(driver, d.take())
			}
			stepStart = e.Time
		}}, runner.CallOptions{})
	if err != nil {
		return nil, fmt.Errorf("runner overhead: %w", err)
	}
	if err := srv.Err(); err != nil {
		return nil, fmt.Errorf("runner overhead: %w", err)
	}
	bare, err := b.measureBareLoop(ctx)
	if err != nil {
		return nil, err
	}
	f := timeFigure(idRunnerOverhead, "runner overhead per step (3 moves, fitted into 1280×800; minus model server and driver)", stepOverhead(srv, walls, driver))
	f.Note = "target ≤ 5 ms"
	f.compare(bare)
	return []Figure{f, bare}, nil
}

// stepOverhead is each step's wall time minus the model server's and the
// driver's. Step k runs from request k to request k+1: it holds the
// model's answer to request k and the driver's work on it. The first step
// (a screenshot alone) and the final answer are left out.
func stepOverhead(srv *respserver.Server, walls, driver []time.Duration) []time.Duration {
	reqs := srv.Requests()
	var overhead []time.Duration
	for k := 1; k < len(walls) && k < len(reqs); k++ {
		overhead = append(overhead, walls[k]-reqs[k].Handled-driver[k])
	}
	return overhead
}

// measureBareLoop is the runner figure's peer: the same steps through a
// bare openai-go loop (no validation, approvals, events or scaling checks
// of its own), timed the same way.
func (b *sizeBench) measureBareLoop(ctx context.Context) (Figure, error) {
	srv, url := respserver.Start(bareloop.Turns(runnerSteps)...)
	defer srv.Close()
	api := openai.NewClient(option.WithBaseURL(url), option.WithAPIKey("bench"), option.WithMaxRetries(0))
	d := &timedDriver{Driver: b.client}
	var (
		stepStart time.Time
		walls     []time.Duration
		driver    []time.Duration
	)
	err := bareloop.Run(ctx, api, d, "bench", "move the mouse", func() {
		now := time.Now()
		if !stepStart.IsZero() {
			walls = append(walls, now.Sub(stepStart))
			driver = append(driver, d.take())
		}
		stepStart = now
	})
	if err != nil {
		return Figure{}, err
	}
	if err := srv.Err(); err != nil {
		return Figure{}, fmt.Errorf("bare loop: %w", err)
	}
	f := timeFigure(idBareLoop, "bare openai-go loop per step (the same steps; decode, run, send the screenshot)", stepOverhead(srv, walls, driver))
	f.Peer = true
	return f, nil
}
