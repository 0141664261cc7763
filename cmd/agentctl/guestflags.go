package main

import (
	"context"
	"errors"
	"flag"
	"fmt"
	"io/fs"
	"os"
	"strings"

	"github.com/agentd-dev/agentd/guest"
	"github.com/agentd-dev/agentd/guest/backend"
)

// guestFlags are the flags every command that talks to a running agentd takes.
type guestFlags struct {
	addr      string
	tokenFile string
	// reach makes the connection to agentd of a guest known as a backend's
	// Instance (backend.Dialer: its tunnel or port-forward, else its
	// address); nil for an address given as such.
	reach guest.DialFunc
}

func (g *guestFlags) register(fs *flag.FlagSet) {
	fs.StringVar(&g.addr, "guest", os.Getenv("AGENTD_ADDR"), "agentd address (host:port or unix:/path) or the name of a guest from 'agentctl guest up' (default $AGENTD_ADDR)")
	fs.StringVar(&g.tokenFile, "token-file", os.Getenv("AGENTD_TOKEN_FILE"), "file holding agentd's token (default $AGENTD_TOKEN_FILE, else $AGENTD_TOKEN)")
}

// resolve turns a guest's name into its address, its token file and the
// way its backend reaches it; an address is left as it is. A name
// identifies the guest fully, so its own token file wins over
// $AGENTD_TOKEN_FILE.
func (g *guestFlags) resolve(ctx context.Context) error {
	if g.addr == "" || strings.Contains(g.addr, ":") {
		return nil
	}
	if err := backend.CheckName(g.addr); err != nil {
		return fmt.Errorf("--guest %q: want host:port, unix:/path or a guest's name", g.addr)
	}
	// The handle is not closed: the dial function may need it for as long
	// as the command talks to the guest, and the command ends with it.
	inst, err := backend.Open(ctx, g.addr)
	if errors.Is(err, fs.ErrNotExist) {
		return fmt.Errorf("--guest %q: no guest of that name runs ('agentctl guest status' lists them)", g.addr)
	}
	if err != nil {
		return fmt.Errorf("--guest %q: %w", g.addr, err)
	}
	g.from(inst)
	return nil
}

// from points g at inst's agentd.
func (g *guestFlags) from(inst backend.Instance) {
	d := inst.Describe()
	g.addr, g.tokenFile, g.reach = d.Addr, d.TokenFile, backend.Dialer(inst)
}

// options are the client's options that reach g's agentd.
func (g *guestFlags) options() guest.DialOptions { return guest.DialOptions{Dial: g.reach} }

func (g *guestFlags) token() (string, error) {
	if g.tokenFile == "" {
		if t := strings.TrimSpace(os.Getenv("AGENTD_TOKEN")); t != "" {
			return t, nil
		}
		return "", fmt.Errorf("no token: pass --token-file or set AGENTD_TOKEN")
	}
	data, err := os.ReadFile(g.tokenFile)
	if err != nil {
		return "", fmt.Errorf("token file: %w", err)
	}
	return strings.TrimSpace(string(data)), nil
}

func (g *guestFlags) dial(ctx context.Context) (*guest.Client, error) {
	if g.addr == "" {
		return nil, fmt.Errorf("no guest: pass --guest ADDR (see 'agentctl guest status')")
	}
	if err := g.resolve(ctx); err != nil {
		return nil, err
	}
	tok, err := g.token()
	if err != nil {
		return nil, err
	}
	return guest.DialWith(ctx, g.addr, tok, g.options())
}
