package main

import (
	"context"
	"flag"
	"fmt"
	"os"
	"strings"

	"github.com/agentd-dev/agentd/guest"
)

// guestFlags are the flags every command that talks to a running agentd takes.
type guestFlags struct {
	addr      string
	tokenFile string
}

func (g *guestFlags) register(fs *flag.FlagSet) {
	fs.StringVar(&g.addr, "guest", os.Getenv("AGENTD_ADDR"), "agentd address: host:port or unix:/path (default $AGENTD_ADDR)")
	fs.StringVar(&g.tokenFile, "token-file", os.Getenv("AGENTD_TOKEN_FILE"), "file holding agentd's token (default $AGENTD_TOKEN_FILE, else $AGENTD_TOKEN)")
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
	tok, err := g.token()
	if err != nil {
		return nil, err
	}
	return guest.Dial(ctx, g.addr, tok)
}
