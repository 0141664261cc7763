package mcpserver

import (
	"context"
	"encoding/json"
	"fmt"
	"image/color"
	"math/rand/v2"
	"os"
	"os/exec"
	"path/filepath"
	"syscall"
	"testing"
	"time"

	"github.com/modelcontextprotocol/go-sdk/mcp"

	"github.com/agentd-dev/agentd/actions"
	"github.com/agentd-dev/agentd/actions/wire"
	"github.com/agentd-dev/agentd/guest"
	"github.com/agentd-dev/agentd/internal/agentdtest"
	"github.com/agentd-dev/agentd/internal/prereq"
	"github.com/agentd-dev/agentd/internal/randhex"
	"github.com/agentd-dev/agentd/internal/xrecorder"
	"github.com/agentd-dev/agentd/internal/xvfbtest"
	"github.com/agentd-dev/agentd/runner/computer"
)

// benchGuest is a real agentd on a private Xvfb, and a client of it.
func benchGuest(b *testing.B) *guest.Client {
	b.Helper()
	prereq.Programs(b, prereq.X, "Xvfb")
	x := xvfbtest.Start(b, 1440, 900)
	// A busy screen, so the screenshot's PNG is as large as a real
	// desktop's (about 190 KB in the 1280×800 view, as agentctl bench's
	// desktop): the SDK's cost grows with it.
	rec := xrecorder.Start(b, x.Display)
	rng := rand.New(rand.NewPCG(1, 2))
	for y := 0; y < 900; y += 6 {
		for x := 0; x < 1440; x += 12 {
			rec.Fill(b, x, y, 12, 6, color.RGBA{R: uint8(rng.IntN(256)), G: uint8(rng.IntN(256)), B: uint8(rng.IntN(256)), A: 255})
		}
	}
	dir := b.TempDir()
	token := randhex.String(32)
	tokenFile, addrFile := filepath.Join(dir, "token"), filepath.Join(dir, "addr")
	if err := os.WriteFile(tokenFile, []byte(token), 0o600); err != nil {
		b.Fatal(err)
	}
	cmd := exec.Command(agentdtest.Binary(b), "--display", x.Display, "--listen", "127.0.0.1:0", "--addr-file", addrFile, "--token-file", tokenFile)
	addr, _ := agentdtest.Start(b, cmd, addrFile, 30*time.Second)
	ctx, cancel := context.WithTimeout(context.Background(), 20*time.Second)
	defer cancel()
	c, err := guest.Dial(ctx, addr, token)
	if err != nil {
		b.Fatal(err)
	}
	b.Cleanup(func() { c.Close() })
	return c
}

// BenchmarkComputerCall is one MCP computer call (a move and its settled
// screenshot in a 1280×800 fitted view) from the SDK's client over a pair
// of pipes, its run record written; BenchmarkComputerCallAct the same call
// through the guest client alone. Their difference is the MCP server's own
// cost (agentctl bench's mcp-call and act-call figures), with and without
// the session's run record; profile it with
// go test -run '^$' -bench ComputerCall -cpuprofile cpu.out ./runner/mcpserver/.
func BenchmarkComputerCall(b *testing.B) {
	c := benchGuest(b)
	b.Run("record", func(b *testing.B) { benchCalls(b, c, b.TempDir()) })
	b.Run("no-record", func(b *testing.B) { benchCalls(b, c, "") })
}

// benchCalls times computer calls through a new MCP session on c, with a
// run record in records ("": none).
func benchCalls(b *testing.B, c *guest.Client, records string) {
	srv, err := New(Config{View: wire.View{Width: 1280, Height: 800, Fit: true}, RecordDir: records,
		Open: func(context.Context) (*Desktop, error) {
			return &Desktop{Client: c, Addr: "bench", Close: func() {}}, nil
		}})
	if err != nil {
		b.Fatal(err)
	}
	ctx := context.Background()
	// A pair of pipes, as a stdio client's.
	toServer, fromClient, err := os.Pipe()
	if err != nil {
		b.Fatal(err)
	}
	toClient, fromServer, err := os.Pipe()
	if err != nil {
		b.Fatal(err)
	}
	sctx, stop := context.WithCancel(ctx)
	served := make(chan struct{})
	go func() {
		defer close(served)
		_ = srv.Serve(sctx, &mcp.IOTransport{Reader: toServer, Writer: fromServer})
	}()
	defer func() {
		stop()
		fromClient.Close()
		toClient.Close()
		<-served
		toServer.Close()
		fromServer.Close()
	}()
	cs, err := mcp.NewClient(&mcp.Implementation{Name: "bench", Version: "v0"}, nil).Connect(ctx, &mcp.IOTransport{Reader: toClient, Writer: fromClient}, nil)
	if err != nil {
		b.Fatal(err)
	}
	defer cs.Close()
	args := [2]json.RawMessage{json.RawMessage(`{"actions":[{"type":"move","x":100,"y":100}]}`), json.RawMessage(`{"actions":[{"type":"move","x":400,"y":300}]}`)}
	defer reportCPU(b)()
	for i := 0; b.Loop(); i++ {
		res, err := cs.CallTool(ctx, &mcp.CallToolParams{Name: ComputerToolName, Arguments: args[i%2]})
		if err != nil || res.IsError {
			b.Fatalf("call: %v %v", err, res)
		}
		if i == 0 {
			b.ReportMetric(float64(len(res.Content[0].(*mcp.ImageContent).Data)), "png-bytes")
		}
	}
}

func BenchmarkComputerCallAct(b *testing.B) {
	c := benchGuest(b)
	c.SetView(wire.View{Width: 1280, Height: 800, Fit: true})
	ctx := context.Background()
	pts := [2][2]int{{100, 100}, {400, 300}}
	defer reportCPU(b)()
	for i := 0; b.Loop(); i++ {
		p := pts[i%2]
		if _, err := c.Run(ctx, []actions.Action{{Type: actions.Move, X: p[0], Y: p[1]}}, computer.Hooks{}); err != nil {
			b.Fatal(fmt.Errorf("act: %w", err))
		}
	}
}

// reportCPU reports this process's CPU time per op (user + system: the
// SDK's client and server, the guest client; agentd is another process)
// when the returned function runs: under a shared machine's load, CPU
// time is what the wall clock cannot tell apart from waiting for a core.
func reportCPU(b *testing.B) func() {
	start := cputime()
	return func() { b.ReportMetric(float64(cputime()-start)/float64(b.N), "cpu-ns/op") }
}

func cputime() time.Duration {
	var ru syscall.Rusage
	_ = syscall.Getrusage(syscall.RUSAGE_SELF, &ru)
	return time.Duration(ru.Utime.Nano() + ru.Stime.Nano())
}
