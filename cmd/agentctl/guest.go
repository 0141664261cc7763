package main

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"os"
	"time"

	"github.com/agentd-dev/agentd/guest/backend"
	"github.com/agentd-dev/agentd/local"

	// The backends agentctl offers, each registered by its package.
	_ "github.com/agentd-dev/agentd/docker"
	_ "github.com/agentd-dev/agentd/kubernetes"
	_ "github.com/agentd-dev/agentd/vm"
)

func init() {
	// A named local guest runs under 'agentctl guest supervise'.
	local.SupervisorArgs = []string{"guest", "supervise"}
}

const guestUsage = `usage: agentctl guest <up|down|status|pool> [flags]

  up      start a guest desktop that keeps running after the command
  down    stop a guest and remove everything it left
  status  show guests: backend, display, agentd address, token file, health
  pool    keep started guests ready for 'agentctl run --guest docker'

Run 'agentctl guest <command> -h' for its flags.`

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

func guestUp(ctx context.Context, args []string) error {
	fs := flagSet("guest up", "")
	var o backend.UpOptions
	o.Register(fs, local.DefaultWidth, local.DefaultHeight)
	backend.RegisterFlags(fs) // a backend's own settings: kubernetes' --namespace, ...
	if err := fs.Parse(args); err != nil {
		return err
	}
	if fs.NArg() > 0 {
		return fmt.Errorf("guest up: unexpected arguments %q", fs.Args())
	}
	b, spec, err := o.Check()
	if err != nil {
		return err
	}
	start := time.Now()
	fmt.Printf("starting %s guest %q\n", b.Name(), o.Name)
	spec.Progress = backend.Progress(os.Stdout)
	g, err := backend.Up(ctx, b, spec)
	if errors.Is(err, backend.ErrRunning) {
		return err
	}
	if err != nil {
		return fmt.Errorf("guest %q did not come up: %w", o.Name, err)
	}
	defer g.Close()
	backend.WriteUp(os.Stdout, g.Describe(), time.Since(start))
	return nil
}

func guestDown(ctx context.Context, args []string) error {
	fs := flagSet("guest down", "")
	name := fs.String("name", backend.DefaultName, "guest name")
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
	fs := flagSet("guest status", "")
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
	out, err := backend.Statuses(ctx, *where, *name)
	if err != nil {
		return err
	}
	if *asJSON {
		enc := json.NewEncoder(os.Stdout)
		enc.SetIndent("", "  ")
		return enc.Encode(out)
	}
	backend.WriteStatus(os.Stdout, root, out)
	return nil
}
