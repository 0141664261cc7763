package bench

import (
	"bytes"
	"context"
	"fmt"
	"os"
	"path/filepath"
	"strings"
	"time"

	"github.com/agentd-dev/agentd/actions/wire"
	"github.com/agentd-dev/agentd/guest"
	"github.com/agentd-dev/agentd/tools/bench/probe"
)

var (
	nativeView = wire.View{}
	fitView    = wire.View{Width: probe.FitWidth, Height: probe.FitHeight, Fit: true}
	pngMagic   = []byte("\x89PNG\r\n\x1a\n")
)

// Screenshot figure IDs.
const (
	idShotNative  = "screenshot-native"
	idShotFit     = "screenshot-fit"
	idShotSame    = "screenshot-fit-unchanged"
	idCapture     = "capture"
	idScale       = "scale-fit"
	idEncode      = "encode-native"
	idEncodeFit   = "encode-fit"
	idScrot       = "scrot"
	idImport      = "import"
	idKbinaniPNG  = "kbinani+png"
	idKbinani     = "kbinani-capture"
	idRobotgoPNG  = "robotgo+png"
	idRobotgo     = "robotgo-capture"
	fitViewString = "fit within 1280x800"
)

// views are the --view choices whose bytes and tokens the report lists.
var views = []struct {
	name string
	view wire.View
}{
	{"native (no scaling)", nativeView},
	{fitViewString + " (the default)", fitView},
	{"fit within 1024x768", wire.View{Width: 1024, Height: 768, Fit: true}},
	{"fit within 800x600", wire.View{Width: 800, Height: 600, Fit: true}},
}

// measureViews takes one screenshot in each of views, of the same screen.
func (b *sizeBench) measureViews(ctx context.Context) ([]ImageCost, error) {
	var costs []ImageCost
	for _, v := range views {
		b.client.SetView(v.view)
		s, err := b.client.Screenshot(ctx)
		if err != nil {
			return nil, fmt.Errorf("screenshot, %s: %w", v.name, err)
		}
		costs = append(costs, imageCost(v.name, s.Transform.Image.W, s.Transform.Image.H, len(s.PNG)))
	}
	return costs, nil
}

// measureScreenshots times agentd's screenshots end to end, its capture,
// scaling and encoding alone (in the probe), and the peers, interleaved.
//
// agentd's screenshots are of a screen changed just before (the target
// flipped, untimed), as after an action: a still screen would be served
// from agentd's last PNG, which the unchanged-screen figure measures: one
// screenshot untimed, then the same again.
func (b *sizeBench) measureScreenshots(ctx context.Context) ([]Figure, error) {
	shot := func(ctx context.Context, v wire.View) (guest.Screenshot, time.Duration, error) {
		b.client.SetView(v)
		start := time.Now()
		s, err := b.client.Screenshot(ctx)
		d := time.Since(start)
		if err != nil {
			return s, 0, err
		}
		if !bytes.HasPrefix(s.PNG, pngMagic) {
			return s, 0, fmt.Errorf("screenshot is not a PNG")
		}
		return s, d, nil
	}
	changed := func(v wire.View) func(context.Context) (time.Duration, error) {
		return func(ctx context.Context) (time.Duration, error) {
			if err := b.desk.change(ctx); err != nil {
				return 0, err
			}
			_, d, err := shot(ctx, v)
			return d, err
		}
	}
	cs := []contender{
		{id: idShotNative, run: changed(nativeView)},
		{id: idShotFit, run: changed(fitView)},
		{id: idShotSame, run: func(ctx context.Context) (time.Duration, error) {
			first, _, err := shot(ctx, fitView)
			if err != nil {
				return 0, err
			}
			again, d, err := shot(ctx, fitView)
			if err != nil {
				return 0, err
			}
			if !bytes.Equal(again.PNG, first.PNG) {
				return 0, fmt.Errorf("two screenshots of a still screen differ")
			}
			return d, nil
		}},
	}
	missing := map[string]string{}
	for _, p := range []struct {
		id, probe string
		peer      bool
	}{
		{idCapture, probe.Capture, false}, {idScale, probe.ScaleFit, false},
		{idEncode, probe.EncodeNative, false}, {idEncodeFit, probe.EncodeFit, false},
		{idKbinaniPNG, probe.KbinaniPNG, true}, {idKbinani, probe.KbinaniCapture, true},
		{idRobotgoPNG, probe.RobotgoPNG, true}, {idRobotgo, probe.RobotgoCapture, true},
	} {
		if why := b.probeMissing(p.probe); why != "" {
			missing[p.id] = why
			continue
		}
		run := b.probeRun(p.probe)
		if p.id == idCapture { // a still screen is not read again: change it first (untimed)
			probeRun := run
			run = func(ctx context.Context) (time.Duration, error) {
				if err := b.desk.change(ctx); err != nil {
					return 0, err
				}
				return probeRun(ctx)
			}
		}
		cs = append(cs, contender{id: p.id, peer: p.peer, run: run})
	}
	for _, p := range []struct {
		id   string
		tool tool
		args func(file string) []string
	}{
		{idScrot, scrotTool, func(f string) []string { return []string{"--overwrite", "--silent", f} }},
		{idImport, importTool, func(f string) []string { return []string{"-window", "root", "png:" + f} }},
	} {
		path, why := p.tool.find()
		if why != "" {
			missing[p.id] = why
			continue
		}
		file := filepath.Join(b.shell.dir, p.id+".png")
		cs = append(cs, contender{id: p.id, peer: true, run: func(ctx context.Context) (time.Duration, error) {
			start := time.Now()
			if err := b.shell.run(ctx, path, p.args(file)...); err != nil {
				return 0, err
			}
			data, err := os.ReadFile(file)
			d := time.Since(start)
			if err != nil {
				return 0, err
			}
			if !bytes.HasPrefix(data, pngMagic) {
				return 0, fmt.Errorf("%s wrote no PNG", p.tool.name)
			}
			return d, nil
		}})
	}
	res, err := runRounds(ctx, cs, turns(b.duration, 3))
	if err != nil {
		return nil, fmt.Errorf("screenshots: %w", err)
	}
	fig := func(id, name string, peer bool) Figure {
		f := timeFigure(id, name, res.samples[id])
		f.Peer = peer
		f.Missing = res.missing(id, missing[id])
		return f
	}
	size := b.size.String()
	scrot := fig(idScrot, "scrot + file read", true)
	imp := fig(idImport, "ImageMagick import -window root + file read", true)
	kbPNG := fig(idKbinaniPNG, "kbinani/screenshot + image/png", true)
	kb := fig(idKbinani, "kbinani/screenshot capture alone", true)
	rgPNG := fig(idRobotgoPNG, "robotgo.CaptureImg + image/png", true)
	rg := fig(idRobotgo, "robotgo.CaptureImg alone", true)

	native := fig(idShotNative, "end to end, native "+size+", screen changed (request → PNG in hand)", false)
	native.compare(scrot, imp, kbPNG, rgPNG)
	fit := fig(idShotFit, "end to end, "+fitViewString+", screen changed", false)
	fit.compare(scrot, imp, kbPNG, rgPNG)
	fit.Note = fmt.Sprintf("%.2f× native's time", fit.P50/native.P50)
	same := fig(idShotSame, "end to end, "+fitViewString+", screen unchanged since the last", false)
	same.compare(scrot, imp, kbPNG, rgPNG)
	capture := fig(idCapture, "capture alone (agentd, "+b.captureMethod()+")", false)
	capture.compare(kb, rg)
	return []Figure{
		native, fit, same, capture,
		fig(idScale, "scale alone, "+size+" → "+fitViewString, false),
		fig(idEncode, "encode alone, native "+size, false),
		fig(idEncodeFit, "encode alone, "+fitViewString, false),
		scrot, imp, kbPNG, rgPNG, kb, rg,
	}, nil
}

// probeMissing says why a probe cannot be run, or "".
func (b *sizeBench) probeMissing(name string) string {
	if b.probe == nil {
		return "probe unavailable: " + b.probeErr.Error()
	}
	h := b.probe.Hello()
	if why, ok := h.Unavailable[name]; ok {
		return why
	}
	for _, p := range h.Probes {
		if p == name {
			return ""
		}
	}
	return "this agentd's probe lacks " + name + " (rebuild with 'make build')"
}

func (b *sizeBench) probeRun(name string) func(context.Context) (time.Duration, error) {
	return func(context.Context) (time.Duration, error) {
		d, _, err := b.probe.Run(name)
		return d, err
	}
}

// captureMethod is agentd's capture method, as its hello announced it.
func (b *sizeBench) captureMethod() string {
	for _, c := range b.client.Hello().Capabilities {
		if m, ok := strings.CutPrefix(c, "capture:"); ok {
			return m
		}
	}
	return "method unknown"
}
