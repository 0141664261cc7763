package mcpserver

import (
	"bytes"
	"context"
	"encoding/json"
	"fmt"
	"image/color"
	"math/rand/v2"
	"os"
	"os/exec"
	"path/filepath"
	"testing"
	"time"

	"github.com/modelcontextprotocol/go-sdk/mcp"

	"github.com/agentd-dev/agentd/actions"
	"github.com/agentd-dev/agentd/actions/wire"
	"github.com/agentd-dev/agentd/guest"
	"github.com/agentd-dev/agentd/internal/agentdtest"
	"github.com/agentd-dev/agentd/internal/cputime"
	"github.com/agentd-dev/agentd/internal/mcpraw"
	"github.com/agentd-dev/agentd/internal/prereq"
	"github.com/agentd-dev/agentd/internal/randhex"
	"github.com/agentd-dev/agentd/internal/xrecorder"
	"github.com/agentd-dev/agentd/internal/xvfbtest"
	"github.com/agentd-dev/agentd/runner/computer"
)

// benchGuest is a real agentd on a private Xvfb, and a client of it.
func benchGuest(b *testing.B) *guest.Client {
	b.Helper()
	c, display := desktopGuest(b)
	// A busy screen, so the screenshot's PNG is as large as a real
	// desktop's (about 190 KB in the 1280×800 view, as agentctl bench's
	// desktop): the SDK's cost grows with it.
	rec := xrecorder.Start(b, display)
	rng := rand.New(rand.NewPCG(1, 2))
	for y := 0; y < 900; y += 6 {
		for x := 0; x < 1440; x += 12 {
			rec.Fill(b, x, y, 12, 6, color.RGBA{R: uint8(rng.IntN(256)), G: uint8(rng.IntN(256)), B: uint8(rng.IntN(256)), A: 255})
		}
	}
	return c
}

// desktopGuest is a real agentd on a private 1440×900 Xvfb, a client of it
// and the display.
func desktopGuest(tb testing.TB) (*guest.Client, string) {
	tb.Helper()
	addr, token, display := desktopAgentd(tb)
	return agentdtest.Dial(tb, addr, token), display
}

// rawSession serves c through a Server configured by cfg (the 1280×800
// fitted view, c as every session's desktop) over a pair of pipes, and
// opens an MCP session on it with mcpraw. stop ends the server.
func rawSession(t *testing.T, c *guest.Client, cfg Config) (rc *mcpraw.Client, stop func()) {
	t.Helper()
	cfg.View = wire.View{Width: 1280, Height: 800, Fit: true}
	cfg.Open = func(context.Context) (*Desktop, error) {
		return &Desktop{Client: c, Addr: "test", Close: func() {}}, nil
	}
	srv, err := New(cfg)
	if err != nil {
		t.Fatal(err)
	}
	r, w, stop, err := srv.ServePipes(context.Background())
	if err != nil {
		t.Fatal(err)
	}
	rc, err = mcpraw.Start(r, w, "test")
	if err != nil {
		stop()
		t.Fatal(err)
	}
	return rc, stop
}

// desktopAgentd is a real agentd on a private 1440×900 Xvfb: its address,
// token and display.
func desktopAgentd(tb testing.TB) (addr, token, display string) {
	tb.Helper()
	prereq.Programs(tb, prereq.X, "Xvfb")
	x := xvfbtest.Start(tb, 1440, 900)
	dir := tb.TempDir()
	token = randhex.String(32)
	tokenFile, addrFile := filepath.Join(dir, "token"), filepath.Join(dir, "addr")
	if err := os.WriteFile(tokenFile, []byte(token), 0o600); err != nil {
		tb.Fatal(err)
	}
	cmd := exec.Command(agentdtest.Binary(tb), "--display", x.Display, "--listen", "127.0.0.1:0", "--addr-file", addrFile, "--token-file", tokenFile)
	addr, _ = agentdtest.Start(tb, cmd, addrFile, 30*time.Second)
	return addr, token, x.Display
}

// BenchmarkComputerCall is one MCP computer call (a move and its settled
// screenshot in a 1280×800 fitted view) over a pair of pipes, as a stdio
// client's; BenchmarkComputerCallAct the same call through the guest client
// alone. "raw" asks with a client that reads the response's bytes without
// decoding them (mcpraw): its difference from the act call is the MCP
// server's own cost (agentctl bench's mcp-raw), and "raw-no-record" shows
// what the run record adds to it. "record" and "no-record"
// ask with the SDK's client, which decodes the result (the message, then the
// image's base64), with and without the session's run record (mcp-call).
// Profile it with
// go test -run '^$' -bench ComputerCall -cpuprofile cpu.out ./runner/mcpserver/.
func BenchmarkComputerCall(b *testing.B) {
	c := benchGuest(b)
	b.Run("raw", func(b *testing.B) { benchCalls(b, c, b.TempDir(), true) })
	b.Run("raw-no-record", func(b *testing.B) { benchCalls(b, c, "", true) })
	b.Run("record", func(b *testing.B) { benchCalls(b, c, b.TempDir(), false) })
	b.Run("no-record", func(b *testing.B) { benchCalls(b, c, "", false) })
}

// benchCalls times computer calls through a new MCP session on c, with a
// run record in records ("": none), asked by mcpraw (raw) or the SDK's
// client.
func benchCalls(b *testing.B, c *guest.Client, records string, raw bool) {
	srv, err := New(Config{View: wire.View{Width: 1280, Height: 800, Fit: true}, RecordDir: records,
		Open: func(context.Context) (*Desktop, error) {
			return &Desktop{Client: c, Addr: "bench", Close: func() {}}, nil
		}})
	if err != nil {
		b.Fatal(err)
	}
	ctx := context.Background()
	r, w, stop, err := srv.ServePipes(ctx)
	if err != nil {
		b.Fatal(err)
	}
	defer stop()
	args := [2]json.RawMessage{json.RawMessage(`{"actions":[{"type":"move","x":100,"y":100}]}`), json.RawMessage(`{"actions":[{"type":"move","x":400,"y":300}]}`)}
	var call func(i int) error
	if raw {
		rc, err := mcpraw.Start(r, w, "bench")
		if err != nil {
			b.Fatal(err)
		}
		call = func(i int) error {
			line, err := rc.Call("tools/call", json.RawMessage(`{"name":"`+ComputerToolName+`","arguments":`+string(args[i%2])+`}`))
			if err != nil || !bytes.Contains(line, []byte(`"type":"image"`)) {
				return fmt.Errorf("call: %v %.300s", err, line)
			}
			return nil
		}
	} else {
		cs, err := mcp.NewClient(&mcp.Implementation{Name: "bench", Version: "v0"}, nil).Connect(ctx, &mcp.IOTransport{Reader: r, Writer: w}, nil)
		if err != nil {
			b.Fatal(err)
		}
		defer cs.Close()
		call = func(i int) error {
			res, err := cs.CallTool(ctx, &mcp.CallToolParams{Name: ComputerToolName, Arguments: args[i%2]})
			if err != nil || res.IsError {
				return fmt.Errorf("call: %v %v", err, res)
			}
			if i == 0 {
				b.ReportMetric(float64(len(res.Content[0].(*mcp.ImageContent).Data)), "png-bytes")
			}
			return nil
		}
	}
	i := 0
	cputime.Loop(b, func() error { i++; return call(i - 1) })
}

func BenchmarkComputerCallAct(b *testing.B) {
	c := benchGuest(b)
	c.SetView(wire.View{Width: 1280, Height: 800, Fit: true})
	ctx := context.Background()
	pts := [2][2]int{{100, 100}, {400, 300}}
	i := 0
	cputime.Loop(b, func() error {
		p := pts[i%2]
		i++
		if _, err := c.Run(ctx, []actions.Action{{Type: actions.Move, X: p[0], Y: p[1]}}, computer.Hooks{}); err != nil {
			return fmt.Errorf("act: %w", err)
		}
		return nil
	})
}
