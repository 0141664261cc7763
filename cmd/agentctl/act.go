package main

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"os"
	"strings"

	"github.com/agentd-dev/agentd/actions"
	"github.com/agentd-dev/agentd/actions/wire"
	"github.com/agentd-dev/agentd/guest"
	"github.com/agentd-dev/agentd/scaling"
)

// actOutput is what act prints: the results and, for a batch, the
// screenshot's transform (the image itself goes to --screenshot-out).
type actOutput struct {
	Results   []wire.ActionResult `json:"results"`
	Error     *wire.Error         `json:"error,omitempty"`
	Transform any                 `json:"transform,omitempty"`
}

func runAct(ctx context.Context, args []string) error {
	fs := flagSet("act", `usage: agentctl act [flags] JSON|-
  JSON is one action object or an array of them, in screen coordinates, e.g.
  '[{"type":"click","x":100,"y":200},{"type":"type","text":"hello"}]'; - reads stdin.
  An array is one call: every action is checked before any runs, and a
  failure names its index in the array.`)
	var g guestFlags
	g.register(fs)
	shotOut := fs.String("screenshot-out", "", "also take a screenshot after the actions and write it here")
	if err := fs.Parse(args); err != nil {
		return err
	}
	if fs.NArg() != 1 {
		fs.Usage()
		return errors.New("expected one JSON argument")
	}
	data, err := argument(fs.Arg(0))
	if err != nil {
		return err
	}
	as, err := actions.DecodeList(data)
	if err != nil {
		return err
	}
	c, err := g.dial(ctx)
	if err != nil {
		return err
	}
	defer c.Close()

	var out actOutput
	var runErr error
	if *shotOut != "" {
		var res guest.BatchResult
		res, runErr = c.Batch(ctx, as, nil)
		out.Results = res.Results
		if res.Screenshot.PNG != nil {
			out.Transform = res.Screenshot.Transform
			if err := os.WriteFile(*shotOut, res.Screenshot.PNG, 0o644); err != nil {
				return fmt.Errorf("write screenshot: %w", err)
			}
		}
	} else {
		// One request either way: agentd checks the whole array before
		// any of it runs, and indexes a failure within the array.
		out.Results, runErr = c.DoAll(ctx, as)
	}
	var ge *guest.Error
	if errors.As(runErr, &ge) {
		out.Error = &wire.Error{Code: ge.Code, Message: ge.Message, FailedIndex: ge.FailedIndex}
		if len(ge.Results) > len(out.Results) {
			out.Results = ge.Results
		}
	}
	enc := json.NewEncoder(os.Stdout)
	enc.SetIndent("", "  ")
	if err := enc.Encode(out); err != nil {
		return err
	}
	return runErr
}

func runScreenshot(ctx context.Context, args []string) error {
	fs := flagSet("screenshot", "")
	var g guestFlags
	g.register(fs)
	out := fs.String("o", "screenshot.png", "output file (- for stdout)")
	size := fs.String("size", "", "fit the image within WxH, keeping the aspect ratio (e.g. 1280x800)")
	exact := fs.Bool("exact", false, "make the image exactly --size, not fitted")
	crop := fs.String("crop", "", "show only this part of the screen: X,Y,WxH (e.g. 0,0,720x450)")
	if err := fs.Parse(args); err != nil {
		return err
	}
	view, err := parseView(*size, *crop, !*exact)
	if err != nil {
		return err
	}
	c, err := g.dial(ctx)
	if err != nil {
		return err
	}
	defer c.Close()
	c.SetView(view)
	shot, err := c.Screenshot(ctx)
	if err != nil {
		return err
	}
	if *out == "-" {
		_, err = os.Stdout.Write(shot.PNG)
		return err
	}
	if err := os.WriteFile(*out, shot.PNG, 0o644); err != nil {
		return fmt.Errorf("write %s: %w", *out, err)
	}
	t := shot.Transform
	fmt.Fprintf(os.Stderr, "%s: %d×%d image of screen %d×%d (crop %d,%d %d×%d), %d bytes\n",
		*out, t.Image.W, t.Image.H, t.Screen.W, t.Screen.H, t.Crop.X, t.Crop.Y, t.Crop.W, t.Crop.H, len(shot.PNG))
	return nil
}

// argument is a command's argument, or for "-" what standard input holds.
func argument(a string) ([]byte, error) {
	if a != "-" {
		return []byte(a), nil
	}
	b, err := io.ReadAll(os.Stdin)
	if err != nil {
		return nil, fmt.Errorf("read stdin: %w", err)
	}
	return b, nil
}

// parseView reads --size WxH and --crop X,Y,WxH.
func parseView(size, crop string, fit bool) (wire.View, error) {
	var v wire.View
	if size != "" {
		if _, err := fmt.Sscanf(size, "%dx%d", &v.Width, &v.Height); err != nil || v.Width <= 0 || v.Height <= 0 {
			return v, fmt.Errorf("--size %q: want WxH, e.g. 1280x800", size)
		}
		v.Fit = fit
	}
	if crop != "" {
		parts := strings.SplitN(crop, ",", 3)
		var x, y, w, h int
		ok := len(parts) == 3
		if ok {
			_, e1 := fmt.Sscanf(parts[0], "%d", &x)
			_, e2 := fmt.Sscanf(parts[1], "%d", &y)
			_, e3 := fmt.Sscanf(parts[2], "%dx%d", &w, &h)
			ok = e1 == nil && e2 == nil && e3 == nil
		}
		if !ok {
			return v, fmt.Errorf("--crop %q: want X,Y,WxH, e.g. 0,0,720x450", crop)
		}
		v.Crop = &scaling.Rect{X: x, Y: y, W: w, H: h}
	}
	return v, nil
}
