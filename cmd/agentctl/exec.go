package main

import (
	"context"
	"errors"
	"fmt"
	"os"
	"path/filepath"
	"strings"
	"time"

	"github.com/agentd-dev/agentd/actions/wire"
)

func runExec(ctx context.Context, args []string) error {
	fs := flagSet("exec", `usage: agentctl exec [flags] CODE|- [CODE|-]...
  Runs each CODE in turn in one Python namespace inside the guest (agentd
  --code): pyautogui, time, log(value) and display(image) are there.
  - reads the code from standard input. Output goes to standard output,
  tracebacks to standard error; the exit status is 1 if a call raised.`)
	var g guestFlags
	g.register(fs)
	deadline := fs.Duration("deadline", 0, "how long each call may run (default: agentd's, 60s)")
	size := fs.String("size", "", "the view the code sees: fit the screen within WxH (e.g. 1280x800); default the whole screen")
	images := fs.String("images", ".", "directory where display()'s images are saved as display-N.png")
	if err := fs.Parse(args); err != nil {
		return err
	}
	if fs.NArg() == 0 {
		fs.Usage()
		return errors.New("expected code to run")
	}
	codes := make([]string, fs.NArg())
	for i, a := range fs.Args() {
		b, err := argument(a)
		if err != nil {
			return err
		}
		codes[i] = string(b)
	}
	view, err := parseView(*size, "", true)
	if err != nil {
		return err
	}
	c, err := g.dial(ctx)
	if err != nil {
		return err
	}
	defer c.Close()
	if *size != "" {
		c.SetView(view)
		if _, err := c.Screenshot(ctx); err != nil {
			return fmt.Errorf("set the view: %w", err)
		}
	}
	saved, raised := 0, false
	for i, code := range codes {
		res, err := c.Exec(ctx, code, *deadline)
		printExec(res)
		for _, im := range res.Images {
			saved++
			name := filepath.Join(*images, fmt.Sprintf("display-%d.png", saved))
			if werr := os.WriteFile(name, im.PNG, 0o644); werr != nil {
				return fmt.Errorf("save image: %w", werr)
			}
			fmt.Fprintf(os.Stderr, "saved %s (%d×%d)\n", name, im.Width, im.Height)
		}
		if err != nil {
			return fmt.Errorf("call %d: %w", i+1, err)
		}
		raised = raised || res.Traceback != ""
	}
	if raised {
		return errors.New("the code raised an exception")
	}
	return nil
}

// printExec shows one call's result: the output as it is, then what a
// person needs to know about the call.
func printExec(res wire.ExecResult) {
	fmt.Print(res.Output)
	if res.Output != "" && !strings.HasSuffix(res.Output, "\n") {
		fmt.Println()
	}
	if res.Traceback != "" {
		fmt.Fprint(os.Stderr, res.Traceback)
	}
	var notes []string
	if res.ImagesDropped > 0 {
		notes = append(notes, fmt.Sprintf("%d images dropped", res.ImagesDropped))
	}
	if len(res.Released) > 0 {
		notes = append(notes, "released at the end: "+strings.Join(res.Released, ", "))
	}
	if res.NamespaceLost {
		notes = append(notes, "namespace lost ("+res.Stopped+")")
	}
	notes = append(notes, (time.Duration(res.DurationUS) * time.Microsecond).String())
	fmt.Fprintf(os.Stderr, "[%s]\n", strings.Join(notes, "; "))
}
