package bench

import (
	"context"
	"fmt"
	"os"
	"path/filepath"
	"time"

	"github.com/agentd-dev/agentd/guest"
	"github.com/agentd-dev/agentd/guest/backend"
	"github.com/agentd-dev/agentd/local" // the bench's guest is a local one
	"github.com/agentd-dev/agentd/tools/bench/probe"
)

// memoryShots is how many screenshots the memory figures span.
const memoryShots = 100

// sizeBench is everything one screen size is measured with: a fresh local
// guest, the desktop on it, a guest client, the probe and a shell for peers.
type sizeBench struct {
	size      Size
	duration  time.Duration
	desk      *desktop
	client    *guest.Client
	probe     *probe.Client // nil if it could not start: probeErr says why
	probeErr  error
	shell     shell
	tokenFile string
	// codeMissing says why code mode is not measured ("" when it is).
	codeMissing string
}

// Run measures everything on a fresh local guest per size and returns the
// report. Nothing is left running when it returns.
func Run(ctx context.Context, o Options) (*Report, error) {
	if err := o.Validate(); err != nil {
		return nil, err
	}
	// As the local guest will, so that the probe is the same build.
	agentd, err := local.FindAgentd(o.AgentdPath)
	if err != nil {
		return nil, err
	}
	o.AgentdPath = agentd
	rep := newReport(o, readMachine())
	for i, size := range o.Sizes {
		sr, input, err := runSize(ctx, o, size, i == 0)
		if err != nil {
			return nil, fmt.Errorf("%v: %w", size, err)
		}
		rep.Sizes = append(rep.Sizes, sr)
		if i == 0 {
			rep.InputSize, rep.Input = size.String(), input
			if rep.Browser, err = measureBrowser(ctx, o, size); err != nil {
				return nil, fmt.Errorf("%v: %w", size, err)
			}
		}
	}
	rep.Machine.LoadEnd = loadAverage()
	return rep, nil
}

func (o Options) progress(format string, args ...any) {
	if o.Progress != nil {
		fmt.Fprintf(o.Progress, "bench: "+format+"\n", args...)
	}
}

func runSize(ctx context.Context, o Options, size Size, withInput bool) (sr SizeReport, input []Figure, err error) {
	sr.Size = size.String()
	o.progress("%v: starting a local guest", size)
	lb, err := backend.Get("local")
	if err != nil {
		return sr, nil, err
	}
	spec := backend.Spec{Width: size.W, Height: size.H, AgentdPath: o.AgentdPath}
	var missing string
	if withInput {
		missing = codeMissing()
		spec.Code = missing == ""
	}
	g, err := lb.Up(ctx, spec)
	if err != nil {
		return sr, nil, err
	}
	defer func() {
		if downErr := g.Down(context.Background()); downErr != nil && err == nil {
			err = downErr
		}
	}()
	b, err := openSizeBench(ctx, g, size, o)
	if err != nil {
		return sr, nil, err
	}
	b.codeMissing = missing
	defer b.close()

	o.progress("%v: screenshots", size)
	if sr.Screenshot, err = b.measureScreenshots(ctx); err != nil {
		return sr, nil, err
	}
	if sr.Images, err = b.measureViews(ctx); err != nil {
		return sr, nil, err
	}
	o.progress("%v: agentd memory over %d screenshots", size, memoryShots)
	if sr.Memory, err = b.measureMemory(ctx, memoryShots); err != nil {
		return sr, nil, err
	}
	o.progress("%v: wait and click → screenshot", size)
	if sr.Settle, err = b.measureSettle(ctx); err != nil {
		return sr, nil, err
	}
	if !withInput {
		return sr, nil, nil
	}
	// Input coordinates are screen coordinates: the view goes back to native.
	b.client.SetView(nativeView)
	if _, err := b.client.Screenshot(ctx); err != nil {
		return sr, nil, err
	}
	o.progress("%v: click, move, keypress", size)
	if input, err = b.measureInput(ctx); err != nil {
		return sr, nil, err
	}
	o.progress("%v: typing", size)
	typing, err := b.measureTyping(ctx)
	if err != nil {
		return sr, nil, err
	}
	o.progress("%v: runner overhead over %d steps", size, runnerSteps)
	overhead, err := b.measureRunner(ctx)
	if err != nil {
		return sr, nil, err
	}
	o.progress("%v: MCP server per computer call", size)
	mcpCost, err := b.measureMCP(ctx)
	if err != nil {
		return sr, nil, err
	}
	return sr, append(append(append(input, typing...), overhead...), mcpCost...), nil
}

// openSizeBench opens the bench's desktop on g's display: the peers run
// on this machine beside agentd.
func openSizeBench(ctx context.Context, g backend.Instance, size Size, o Options) (*sizeBench, error) {
	xr, ok := g.(backend.XReacher)
	if !ok {
		return nil, fmt.Errorf("bench: a %s guest's display cannot be reached from here", g.Describe().Backend)
	}
	x, d := xr.X(), g.Describe()
	b := &sizeBench{size: size, duration: o.Duration, tokenFile: d.TokenFile}
	path := os.Getenv("PATH")
	if path == "" {
		path = "/usr/local/bin:/usr/bin:/bin"
	}
	env := append([]string{"PATH=" + path, "HOME=" + x.Home, "TMPDIR=" + x.TmpDir, "LANG=C.UTF-8"}, x.Env...)
	// The probe is built with agentd (make build) and lives next to it; it
	// is also the desktop, the guest's X client.
	probePath := filepath.Join(filepath.Dir(o.AgentdPath), probe.Binary)
	var err error
	if b.desk, err = openDesktop(ctx, probePath, env, size); err != nil {
		return nil, err
	}
	if b.client, err = backend.Dial(ctx, g); err != nil {
		b.close()
		return nil, err
	}
	b.shell = shell{env: env, dir: x.TmpDir}
	if b.probe, b.probeErr = probe.Start(ctx, probePath, env); b.probeErr != nil {
		o.progress("%v: %v", size, b.probeErr)
	}
	return b, nil
}

func (b *sizeBench) close() {
	if b.probe != nil {
		_ = b.probe.Close()
	}
	if b.client != nil {
		_ = b.client.Close()
	}
	if b.desk != nil {
		b.desk.close()
	}
}
