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
}

func (g *guestFlags) register(fs *flag.FlagSet) {
	fs.StringVar(&g.addr, "guest", os.Getenv("AGENTD_ADDR"), "agentd address (host:port or unix:/path) or the name of a guest from 'agentctl guest up' (default $AGENTD_ADDR)")
	fs.StringVar(&g.tokenFile, "token-file", os.Getenv("AGENTD_TOKEN_FILE"), "file holding agentd's token (default $AGENTD_TOKEN_FILE, else $AGENTD_TOKEN)")
}

// resolve turns a guest's name into its address and token file; an
// address is left as it is. A name identifies the guest fully, so its own
// token file wins over $AGENTD_TOKEN_FILE.
func (g *guestFlags) resolve() error {
	if g.addr == "" || strings.Contains(g.addr, ":") {
		return nil
	}
	if err := backend.CheckName(g.addr); err != nil {
		return fmt.Errorf("--guest %q: want host:port, unix:/path or a guest's name", g.addr)
	}
	st, err := backend.Record(g.addr)
	if errors.Is(err, fs.ErrNotExist) {
		return fmt.Errorf("--guest %q: no guest of that name ('agentctl guest status' lists them)", g.addr)
	}
	if err != nil {
		return fmt.Errorf("--guest %q: %w", g.addr, err)
	}
	g.addr, g.tokenFile = st.Addr, st.TokenFile
	return nil
}

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
	if err := g.resolve(); err != nil {
		return nil, err
	}
	tok, err := g.token()
	if err != nil {
		return nil, err
	}
	return guest.Dial(ctx, g.addr, tok)
}
