package main

import (
	"context"
	"errors"
	"fmt"
	"os"

	"github.com/agentd-dev/agentd/guest/backend"
)

// guestPool keeps --size pooled guests up until interrupted: 'agentctl run
// --guest docker' then takes one instead of starting a guest (see
// backend.Claim). The guests it leaves unclaimed it takes down on exit.
func guestPool(ctx context.Context, args []string) error {
	fs := flagSet("guest pool", "")
	where := fs.String("backend", "docker", "where the guests run (a run takes one with --guest BACKEND)")
	size := fs.Int("size", 1, "how many started guests to keep ready")
	apps := fs.String("apps", "desktop", "applications, as for 'guest up': desktop for 'agentctl run', exercise for 'agentctl exercise'")
	network := fs.Bool("network", false, "guests with a network, for 'agentctl run --network'")
	code := fs.Bool("code", false, "guests whose agentd runs code, for 'agentctl run --mode code'")
	browser := fs.Bool("browser", false, "guests whose agentd drives Chromium, for 'agentctl run --mode browser'")
	backend.RegisterFlags(fs) // a backend's own settings: kubernetes' --namespace, ...
	if err := fs.Parse(args); err != nil {
		return err
	}
	switch {
	case fs.NArg() > 0:
		return fmt.Errorf("guest pool: unexpected arguments %q", fs.Args())
	case *size < 1 || *size > 16:
		return fmt.Errorf("--size %d: want 1..16 guests", *size)
	}
	b, err := backend.Get(*where)
	if err != nil {
		return err
	}
	d, err := backend.LookupDesktop(*apps)
	if err != nil {
		return err
	}
	// The spec a run or the exercise asks for: the desktop's own size
	// (backend.KeyOf).
	spec := backend.Spec{Desktop: d, Network: *network, Code: *code, Browser: *browser}
	if err := b.Check(spec); err != nil {
		return err
	}
	key := backend.KeyOf(b.Name(), spec)
	fmt.Printf("keeping %d %s guest(s) with --apps %s ready; Ctrl-C stops the pool and takes its unclaimed guests down\n", *size, b.Name(), key.Apps)
	if sp, ok := b.(backend.SharedPool); ok {
		// The pool is the cluster's, shared with other keepers.
		if err := sp.KeepPool(ctx, spec, *size, os.Stdout); !errors.Is(err, context.Canceled) {
			return err
		}
		return nil
	}
	err = backend.KeepPool(ctx, b, spec, *size, os.Stdout)
	backend.DrainPool(key, os.Stdout)
	if errors.Is(err, context.Canceled) {
		return nil
	}
	return err
}
