//go:build linux && cgo

package daemon

import (
	"errors"
	"flag"
	"fmt"
	"strings"

	"github.com/agentd-dev/agentd/internal/hidepaths"
)

// pathList is a flag given once per path.
type pathList []string

func (l *pathList) String() string     { return strings.Join(*l, ",") }
func (l *pathList) Set(p string) error { *l = append(*l, p); return nil }

// App is `agentd app --hide DIR [--hide PATH]... -- PROGRAM [ARG]...`:
// it starts a desktop application (the guest's entrypoint starts every one
// this way) with agentd's private directory closed to it and to everything
// it starts, by Landlock. The applications run as agentd's user; without
// Landlock they could read the token, so a kernel without it is refused
// rather than the application started open. It returns only on error.
func App(args []string) error {
	fs := flag.NewFlagSet("agentd app", flag.ContinueOnError)
	var hide pathList
	fs.Var(&hide, "hide", "a path the application must not reach (repeat for more; at least one)")
	fs.Usage = func() {
		fmt.Fprintln(fs.Output(), "usage: agentd app --hide DIR [--hide PATH]... -- PROGRAM [ARG]...")
		fs.PrintDefaults()
	}
	if err := fs.Parse(args); err != nil {
		return err
	}
	if len(hide) == 0 || fs.NArg() == 0 {
		fs.Usage()
		return errors.New("app: want --hide and a program")
	}
	if err := hidepaths.Exec(hide, fs.Args()); err != nil {
		if errors.Is(err, hidepaths.ErrUnsupported) {
			return fmt.Errorf("app: refusing to start %s with agentd's token readable: %w (the guest needs Linux 5.13 or later with Landlock enabled)", fs.Arg(0), err)
		}
		return fmt.Errorf("app: start %s: %w", fs.Arg(0), err)
	}
	return errors.New("app: exec returned")
}
