package bench

import (
	"bytes"
	"context"
	"fmt"
	"os"
	"path/filepath"
	"strings"
	"time"

	"github.com/agentd-dev/agentd/bench/probe"
	"github.com/agentd-dev/agentd/guest"
	"github.com/agentd-dev/agentd/wire"
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

// lastShots keeps the last screenshot of each view, for the byte counts.
type lastShots struct{ native, fit guest.Screenshot }

// measureScreenshots times agentd's screenshots end to end, its capture,
// scaling and encoding alone (in the probe), and the peers, interleaved.
func (b *sizeBench) measureScreenshots(ctx context.Context) ([]Figure, lastShots, error) {
	var last lastShots
	shot := func(v wire.View, keep *guest.Screenshot) func(context.Context) (time.Duration, error) {
		return func(ctx context.Context) (time.Duration, error) {
			b.client.SetView(v)
			start := time.Now()
			s, err := b.client.Screenshot(ctx)
			d := time.Since(start)
			if err != nil {
				return 0, err
			}
			if !bytes.HasPrefix(s.PNG, pngMagic) {
				return 0, fmt.Errorf("screenshot is not a PNG")
			}
			*keep = s
			return d, nil
		}
	}
	cs := []contender{
		{id: idShotNative, run: shot(nativeView, &last.native)},
		{id: idShotFit, run: shot(fitView, &last.fit)},
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
		cs = append(cs, contender{id: p.id, peer: p.peer, run: b.probeRun(p.probe)})
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
		return nil, last, fmt.Errorf("screenshots: %w", err)
	}
	fig := func(id, name string, peer bool) Figure {
		f := timeFigure(id, name, res.samples[id])
		f.Peer = peer
		if why, ok := missing[id]; ok {
			f.Missing = why
		} else if err, ok := res.failed[id]; ok {
			f.Missing = "failed: " + err.Error()
		}
		return f
	}
	size := b.size.String()
	scrot := fig(idScrot, "scrot + file read", true)
	imp := fig(idImport, "ImageMagick import -window root + file read", true)
	kbPNG := fig(idKbinaniPNG, "kbinani/screenshot + image/png", true)
	kb := fig(idKbinani, "kbinani/screenshot capture alone", true)
	rgPNG := fig(idRobotgoPNG, "robotgo.CaptureImg + image/png", true)
	rg := fig(idRobotgo, "robotgo.CaptureImg alone", true)

	native := fig(idShotNative, "end to end, native "+size+" (request → PNG in hand)", false)
	native.compare(scrot, imp, kbPNG, rgPNG)
	fit := fig(idShotFit, "end to end, "+fitViewString, false)
	fit.compare(scrot, imp, kbPNG, rgPNG)
	capture := fig(idCapture, "capture alone (agentd, "+b.captureMethod()+")", false)
	capture.compare(kb, rg)
	return []Figure{
		native, fit, capture,
		fig(idScale, "scale alone, "+size+" → "+fitViewString, false),
		fig(idEncode, "encode alone, native "+size, false),
		fig(idEncodeFit, "encode alone, "+fitViewString, false),
		scrot, imp, kbPNG, rgPNG, kb, rg,
	}, last, nil
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
