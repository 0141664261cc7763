package backend

import (
	"context"
	"flag"
	"fmt"
	"io"
	"os"
	"path/filepath"
	"slices"
	"strconv"
	"strings"
	"time"
)

// DefaultName is the guest agentctl's guest commands mean without --name.
const DefaultName = "default"

// UpOptions are the flags of 'agentctl guest up': the guest a person asks
// for, before any backend has looked at it.
type UpOptions struct {
	Backend, Name, Size, Apps, Agentd string
	KeepLogs, Network, Code, Browser  bool
}

// Register adds the options to fs, the screen size defaulting to width ×
// height (the local guest's).
func (o *UpOptions) Register(fs *flag.FlagSet, width, height int) {
	fs.StringVar(&o.Backend, "backend", "local", "where the guest runs: "+strings.Join(Names(), ", ")+" (local: this machine's Xvfb, docker: a hardened container, kubernetes: a hardened Pod, vm: a Lima VM)")
	fs.StringVar(&o.Name, "name", DefaultName, "guest name")
	fs.StringVar(&o.Size, "size", fmt.Sprintf("%dx%d", width, height), "screen size WIDTHxHEIGHT")
	fs.StringVar(&o.Apps, "apps", "none", "applications: exercise (browser with the pickup form, text editor), desktop (browser and editor; docker and vm) or none")
	fs.StringVar(&o.Agentd, "agentd", "", "agentd binary of a local guest (default: next to agentctl, else on $PATH)")
	fs.BoolVar(&o.KeepLogs, "keep-logs", false, "keep a local guest's logs after down")
	fs.BoolVar(&o.Network, "network", false, "give a docker guest a network for its desktop (default: none; agentd stays on its unix socket)")
	fs.BoolVar(&o.Code, "code", false, "start agentd with --code: Python code execution for agentctl exec and code mode")
	fs.BoolVar(&o.Browser, "browser", false, "start agentd with --browser: Chromium with its sandbox for the browser toolset (local and docker guests; docker adds a seccomp profile allowing the sandbox's user namespaces)")
}

// Check validates the options and returns the backend and the guest's spec.
func (o UpOptions) Check() (Backend, Spec, error) {
	var spec Spec
	b, err := Get(o.Backend)
	if err != nil {
		return nil, spec, err
	}
	if err := CheckName(o.Name); err != nil {
		return nil, spec, err
	}
	w, h, err := ParseSize(o.Size)
	if err != nil {
		return nil, spec, err
	}
	d, err := LookupDesktop(o.Apps)
	if err != nil {
		return nil, spec, err
	}
	if d != nil {
		if dw, dh := d.Size(); dw != 0 && (w != dw || h != dh) {
			return nil, spec, fmt.Errorf("--apps %s needs --size %dx%d: its layout is fixed", o.Apps, dw, dh)
		}
	}
	spec = Spec{Name: o.Name, Width: w, Height: h, Desktop: d, Network: o.Network, AgentdPath: o.Agentd, KeepLogs: o.KeepLogs, Code: o.Code, Browser: o.Browser}
	if err := b.Check(spec); err != nil {
		return nil, spec, err
	}
	return b, spec, nil
}

// ParseSize reads --size WIDTHxHEIGHT, each side 64..8192.
func ParseSize(s string) (int, int, error) {
	ws, hs, ok := strings.Cut(s, "x")
	w, err1 := strconv.Atoi(ws)
	h, err2 := strconv.Atoi(hs)
	if !ok || err1 != nil || err2 != nil || w < 64 || h < 64 || w > 8192 || h > 8192 {
		return 0, 0, fmt.Errorf("--size %q: want WIDTHxHEIGHT, each 64..8192, e.g. 1440x900", s)
	}
	return w, h, nil
}

// Progress prints a start's steps as they come (a Spec's Progress): a first
// start of a container or VM takes minutes.
func Progress(w io.Writer) func(string) {
	return func(line string) { fmt.Fprintf(w, "  %s\n", line) }
}

// WriteUp tells a person that the guest d came up in took and how to use it.
func WriteUp(w io.Writer, d Description, took time.Duration) {
	fmt.Fprintf(w, "guest %q is up (%s, display %s) in %.1fs\n", d.Name, d.Backend, d.Display, took.Seconds())
	WriteGuest(w, d)
	fmt.Fprintf(w, "use it with:\n  export AGENTD_ADDR=%s AGENTD_TOKEN_FILE=%s\nor pass --guest %s to agentctl run, act and screenshot\nstop it with:\n  agentctl guest down --name %s\n",
		d.Addr, d.TokenFile, d.Name, d.Name)
}

// WriteGuest writes where d's agentd and its outputs are.
func WriteGuest(w io.Writer, d Description) {
	fmt.Fprintf(w, "  address:    %s\n  token file: %s\n", d.Addr, d.TokenFile)
	if d.FormURL != "" || d.RecordFile != "" || d.NoteFile != "" {
		fmt.Fprintf(w, "  form:       %s\n  records:    %s\n  note:       %s\n", d.FormURL, d.RecordFile, d.NoteFile)
	}
}

// Statuses are the guests 'agentctl guest status' shows: this machine's
// named guests (only name, when given) or, with where, every guest that
// backend finds.
func Statuses(ctx context.Context, where, name string) ([]NamedStatus, error) {
	var names []string
	var out []NamedStatus
	if where != "" {
		b, err := Get(where)
		if err != nil {
			return nil, err
		}
		if out, err = StatusOn(ctx, b); err != nil {
			return nil, err
		}
		if name != "" {
			out = slices.DeleteFunc(out, func(s NamedStatus) bool { return s.Name != name })
		}
	} else if name != "" {
		dir, err := Dir(name)
		if err != nil {
			return nil, err
		}
		if _, err := os.Stat(dir); err != nil {
			return nil, fmt.Errorf("no guest named %q", name)
		}
		names = []string{name}
	} else {
		var err error
		if names, err = Named(); err != nil {
			return nil, err
		}
	}
	for _, n := range names {
		out = append(out, StatusOf(ctx, n))
	}
	return out, nil
}

// WriteStatus writes a line for each guest of out, and where a running
// one's agentd is; root is where the guests' state lives.
func WriteStatus(w io.Writer, root string, out []NamedStatus) {
	if len(out) == 0 {
		fmt.Fprintln(w, "no guests ('agentctl guest up' starts one)")
	}
	for _, s := range out {
		switch {
		case s.Elsewhere && s.Running:
			fmt.Fprintf(w, "%s: running (%s, %s, up %s, started on another machine), health: %s\n",
				s.Name, s.Backend, s.Owner, time.Since(s.Started).Round(time.Second), s.Health)
			continue
		case s.Elsewhere:
			fmt.Fprintf(w, "%s: not running (%s, found on the %s backend): %s\n", s.Name, s.Owner, s.Backend, s.Health)
			continue
		case s.Starting:
			fmt.Fprintf(w, "%s: starting (%s, for %s)\n", s.Name, s.Backend, time.Since(s.Started).Round(time.Second))
			continue
		case !s.Running:
			fmt.Fprintf(w, "%s: not running (state or kept logs left in %s: 'agentctl guest down --name %s' removes them)\n",
				s.Name, filepath.Join(root, s.Name), s.Name)
			continue
		case s.Addr == "":
			// The program starting it ended before the guest was up.
			fmt.Fprintf(w, "%s: running, but its start did not finish ('agentctl guest down --name %s' removes it)\n", s.Name, s.Name)
			continue
		}
		fmt.Fprintf(w, "%s: running (%s, display %s, %s, up %s), health: %s\n",
			s.Name, s.Backend, s.Display, s.Owner, time.Since(s.Started).Round(time.Second), s.Health)
		WriteGuest(w, s.Description)
	}
}
