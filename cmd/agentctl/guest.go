package main

import (
	"context"
	"encoding/json"
	"errors"
	"flag"
	"fmt"
	"io"
	"os"
	"path/filepath"
	"slices"
	"strconv"
	"strings"
	"time"

	"github.com/agentd-dev/agentd/guest/backend"
	"github.com/agentd-dev/agentd/local"

	// The backends agentctl offers, each registered by its package.
	_ "github.com/agentd-dev/agentd/docker"
	_ "github.com/agentd-dev/agentd/kubernetes"
	_ "github.com/agentd-dev/agentd/vm"
)

func init() {
	register("guest", "start, stop or show a guest desktop", runGuest)
	// A named local guest runs under 'agentctl guest supervise'.
	local.SupervisorArgs = []string{"guest", "supervise"}
}

const guestUsage = `usage: agentctl guest <up|down|status|pool> [flags]

  up      start a guest desktop that keeps running after the command
  down    stop a guest and remove everything it left
  status  show guests: backend, display, agentd address, token file, health
  pool    keep started guests ready for 'agentctl run --guest docker'

Run 'agentctl guest <command> -h' for its flags.`

const defaultGuestName = "default"

func runGuest(ctx context.Context, args []string) error {
	if len(args) == 0 {
		fmt.Fprintln(os.Stderr, guestUsage)
		return errors.New("missing guest command")
	}
	switch args[0] {
	case "up":
		return guestUp(ctx, args[1:])
	case "down":
		return guestDown(ctx, args[1:])
	case "status":
		return guestStatus(ctx, args[1:])
	case "pool":
		return guestPool(ctx, args[1:])
	case "supervise":
		return local.Supervise(ctx, args[1:])
	case "-h", "-help", "--help", "help":
		fmt.Fprintln(os.Stderr, guestUsage)
		return nil
	}
	fmt.Fprintln(os.Stderr, guestUsage)
	return fmt.Errorf("unknown guest command %q", args[0])
}

// upOptions are the flags of up.
type upOptions struct {
	backend  string
	name     string
	size     string
	apps     string
	agentd   string
	keepLogs bool
	network  bool
	code     bool
	browser  bool
}

func (o *upOptions) register(fs *flag.FlagSet) {
	fs.StringVar(&o.backend, "backend", "local", "where the guest runs: "+strings.Join(backend.Names(), ", ")+" (local: this machine's Xvfb, docker: a hardened container, kubernetes: a hardened Pod, vm: a Lima VM)")
	fs.StringVar(&o.name, "name", defaultGuestName, "guest name")
	fs.StringVar(&o.size, "size", fmt.Sprintf("%dx%d", local.DefaultWidth, local.DefaultHeight), "screen size WIDTHxHEIGHT")
	fs.StringVar(&o.apps, "apps", "none", "applications: exercise (browser with the pickup form, text editor), desktop (browser and editor; docker and vm) or none")
	fs.StringVar(&o.agentd, "agentd", "", "agentd binary of a local guest (default: next to agentctl, else on $PATH)")
	fs.BoolVar(&o.keepLogs, "keep-logs", false, "keep a local guest's logs after down")
	fs.BoolVar(&o.network, "network", false, "give a docker guest a network for its desktop (default: none; agentd stays on its unix socket)")
	fs.BoolVar(&o.code, "code", false, "start agentd with --code: Python code execution for agentctl exec and code mode")
	fs.BoolVar(&o.browser, "browser", false, "start agentd with --browser: Chromium with its sandbox for the browser toolset (local and docker guests; docker adds a seccomp profile allowing the sandbox's user namespaces)")
}

// check validates the options and returns the backend and the guest's spec.
func (o *upOptions) check() (backend.Backend, backend.Spec, error) {
	var spec backend.Spec
	b, err := backend.Get(o.backend)
	if err != nil {
		return nil, spec, err
	}
	if err := backend.CheckName(o.name); err != nil {
		return nil, spec, err
	}
	w, h, err := parseSize(o.size)
	if err != nil {
		return nil, spec, err
	}
	d, err := backend.LookupDesktop(o.apps)
	if err != nil {
		return nil, spec, err
	}
	if d != nil {
		if dw, dh := d.Size(); dw != 0 && (w != dw || h != dh) {
			return nil, spec, fmt.Errorf("--apps %s needs --size %dx%d: its layout is fixed", o.apps, dw, dh)
		}
	}
	spec = backend.Spec{Name: o.name, Width: w, Height: h, Desktop: d, Network: o.network, AgentdPath: o.agentd, KeepLogs: o.keepLogs, Code: o.code, Browser: o.browser}
	if err := b.Check(spec); err != nil {
		return nil, spec, err
	}
	return b, spec, nil
}

func parseSize(s string) (int, int, error) {
	ws, hs, ok := strings.Cut(s, "x")
	w, err1 := strconv.Atoi(ws)
	h, err2 := strconv.Atoi(hs)
	if !ok || err1 != nil || err2 != nil || w < 64 || h < 64 || w > 8192 || h > 8192 {
		return 0, 0, fmt.Errorf("--size %q: want WIDTHxHEIGHT, each 64..8192, e.g. 1440x900", s)
	}
	return w, h, nil
}

func guestUp(ctx context.Context, args []string) error {
	fs := flag.NewFlagSet("guest up", flag.ContinueOnError)
	var o upOptions
	o.register(fs)
	backend.RegisterFlags(fs) // a backend's own settings: kubernetes' --namespace, ...
	if err := fs.Parse(args); err != nil {
		return err
	}
	if fs.NArg() > 0 {
		return fmt.Errorf("guest up: unexpected arguments %q", fs.Args())
	}
	b, spec, err := o.check()
	if err != nil {
		return err
	}
	start := time.Now()
	fmt.Printf("starting %s guest %q\n", b.Name(), o.name)
	spec.Progress = guestProgress(os.Stdout)
	g, err := backend.Up(ctx, b, spec)
	if errors.Is(err, backend.ErrRunning) {
		return err
	}
	if err != nil {
		return fmt.Errorf("guest %q did not come up: %w", o.name, err)
	}
	defer g.Close()
	printUp(g.Describe(), time.Since(start))
	return nil
}

// guestProgress prints a start's steps as they come: a first start of a
// container or VM takes minutes.
func guestProgress(w io.Writer) func(string) {
	return func(line string) { fmt.Fprintf(w, "  %s\n", line) }
}

func printUp(d backend.Description, took time.Duration) {
	fmt.Printf("guest %q is up (%s, display %s) in %.1fs\n", d.Name, d.Backend, d.Display, took.Seconds())
	printGuest(os.Stdout, d)
	fmt.Printf("use it with:\n  export AGENTD_ADDR=%s AGENTD_TOKEN_FILE=%s\nor pass --guest %s to agentctl run, act and screenshot\nstop it with:\n  agentctl guest down --name %s\n",
		d.Addr, d.TokenFile, d.Name, d.Name)
}

func printGuest(w io.Writer, d backend.Description) {
	fmt.Fprintf(w, "  address:    %s\n  token file: %s\n", d.Addr, d.TokenFile)
	if d.FormURL != "" || d.RecordFile != "" || d.NoteFile != "" {
		fmt.Fprintf(w, "  form:       %s\n  records:    %s\n  note:       %s\n", d.FormURL, d.RecordFile, d.NoteFile)
	}
}

func guestDown(ctx context.Context, args []string) error {
	fs := flag.NewFlagSet("guest down", flag.ContinueOnError)
	name := fs.String("name", defaultGuestName, "guest name")
	where := fs.String("backend", "", "find the guest through this backend when this machine has no record of it (kubernetes: a guest another machine started)")
	backend.RegisterFlags(fs) // a backend's own settings: kubernetes' --namespace, ...
	if err := fs.Parse(args); err != nil {
		return err
	}
	start := time.Now()
	var running bool
	var err error
	if *where == "" {
		running, err = backend.Down(ctx, *name, false)
	} else if b, berr := backend.Get(*where); berr != nil {
		return berr
	} else {
		running, err = backend.DownOn(ctx, b, *name)
	}
	if err != nil {
		return err
	}
	if !running {
		fmt.Printf("guest %q was not running; removed its stale state\n", *name)
		return nil
	}
	fmt.Printf("guest %q is down (%.1fs)\n", *name, time.Since(start).Seconds())
	return nil
}

func guestStatus(ctx context.Context, args []string) error {
	fs := flag.NewFlagSet("guest status", flag.ContinueOnError)
	name := fs.String("name", "", "guest name (default: every guest)")
	asJSON := fs.Bool("json", false, "print JSON")
	where := fs.String("backend", "", "every guest of this backend as it finds them (kubernetes: the cluster's, started on any machine); default: this machine's records")
	backend.RegisterFlags(fs) // a backend's own settings: kubernetes' --namespace, ...
	if err := fs.Parse(args); err != nil {
		return err
	}
	root, err := backend.Root()
	if err != nil {
		return err
	}
	var names []string
	var out []backend.NamedStatus
	if *where != "" {
		b, err := backend.Get(*where)
		if err != nil {
			return err
		}
		if out, err = backend.StatusOn(ctx, b); err != nil {
			return err
		}
		if *name != "" {
			out = slices.DeleteFunc(out, func(s backend.NamedStatus) bool { return s.Name != *name })
		}
	} else if *name != "" {
		if err := backend.CheckName(*name); err != nil {
			return err
		}
		if _, err := os.Stat(filepath.Join(root, *name)); err != nil {
			return fmt.Errorf("no guest named %q", *name)
		}
		names = []string{*name}
	} else if names, err = backend.Named(); err != nil {
		return err
	}
	for _, n := range names {
		out = append(out, backend.StatusOf(ctx, n))
	}
	if *asJSON {
		enc := json.NewEncoder(os.Stdout)
		enc.SetIndent("", "  ")
		return enc.Encode(out)
	}
	if len(out) == 0 {
		fmt.Println("no guests ('agentctl guest up' starts one)")
	}
	for _, s := range out {
		switch {
		case s.Elsewhere && s.Running:
			fmt.Printf("%s: running (%s, %s, up %s, started on another machine), health: %s\n",
				s.Name, s.Backend, s.Owner, time.Since(s.Started).Round(time.Second), s.Health)
			continue
		case s.Elsewhere:
			fmt.Printf("%s: not running (%s, found on the %s backend): %s\n", s.Name, s.Owner, s.Backend, s.Health)
			continue
		case s.Starting:
			fmt.Printf("%s: starting (%s, for %s)\n", s.Name, s.Backend, time.Since(s.Started).Round(time.Second))
			continue
		case !s.Running:
			fmt.Printf("%s: not running (state or kept logs left in %s: 'agentctl guest down --name %s' removes them)\n",
				s.Name, filepath.Join(root, s.Name), s.Name)
			continue
		case s.Addr == "":
			// The program starting it ended before the guest was up.
			fmt.Printf("%s: running, but its start did not finish ('agentctl guest down --name %s' removes it)\n", s.Name, s.Name)
			continue
		}
		fmt.Printf("%s: running (%s, display %s, %s, up %s), health: %s\n",
			s.Name, s.Backend, s.Display, s.Owner, time.Since(s.Started).Round(time.Second), s.Health)
		printGuest(os.Stdout, s.Description)
	}
	return nil
}
