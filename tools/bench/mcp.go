package bench

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"os"
	"time"

	"github.com/modelcontextprotocol/go-sdk/mcp"

	"github.com/agentd-dev/agentd/actions"
	"github.com/agentd-dev/agentd/actions/wire"
	"github.com/agentd-dev/agentd/runner/computer"
	"github.com/agentd-dev/agentd/runner/mcpserver"
)

const (
	idMCPCall = "mcp-call"
	idActCall = "act-call"
)

// measureMCP times the MCP server's own cost per computer call: one mouse
// move and its settled screenshot in a 1280×800 fitted view, asked by the
// SDK's client of agentctl mcp's server (mcpserver, its run record
// written, as agentctl mcp does by default) over a pair of pipes, as a
// stdio client does; next to it, in interleaved rounds, the same call
// straight through the guest client, as agentctl act sends it (without
// act's process start and dial). The server drives the bench's own
// client: agentd has one controller at a time.
func (b *sizeBench) measureMCP(ctx context.Context) ([]Figure, error) {
	view := wire.View{Width: 1280, Height: 800, Fit: true}
	defer b.client.SetView(nativeView)
	records, err := os.MkdirTemp("", "agentd-bench-mcp-")
	if err != nil {
		return nil, err
	}
	defer os.RemoveAll(records)
	srv, err := mcpserver.New(mcpserver.Config{View: view, RecordDir: records,
		Open: func(context.Context) (*mcpserver.Desktop, error) {
			return &mcpserver.Desktop{Client: b.client, Addr: "bench", Close: func() {}}, nil
		}})
	if err != nil {
		return nil, err
	}
	cs, stop, err := connectPipes(ctx, srv)
	if err != nil {
		return nil, err
	}
	defer stop()

	// The pointer alternates between two points, so each move moves it.
	pts := [2][2]int{{100, 100}, {400, 300}} // inside the image at every size the bench measures (800x600 too)
	n := 0
	next := func() (int, int) { n++; p := pts[n%2]; return p[0], p[1] }
	contenders := []contender{
		{id: idMCPCall, run: func(ctx context.Context) (time.Duration, error) {
			x, y := next()
			start := time.Now()
			res, err := cs.CallTool(ctx, &mcp.CallToolParams{Name: mcpserver.ComputerToolName,
				Arguments: json.RawMessage(fmt.Sprintf(`{"actions":[{"type":"move","x":%d,"y":%d}]}`, x, y))})
			d := time.Since(start)
			if err == nil && res.IsError {
				err = fmt.Errorf("error result: %v", res.Content)
			}
			if err == nil {
				if im, ok := res.Content[0].(*mcp.ImageContent); !ok || len(im.Data) == 0 {
					err = errors.New("no screenshot in the result")
				}
			}
			return d, err
		}},
		{id: idActCall, run: func(ctx context.Context) (time.Duration, error) {
			x, y := next()
			start := time.Now()
			_, err := b.client.Run(ctx, []actions.Action{{Type: actions.Move, X: x, Y: y}}, computer.Hooks{})
			return time.Since(start), err
		}},
	}
	// The MCP contender runs first: its session's first call sets the
	// view both use.
	res, err := runRounds(ctx, contenders, turns(b.duration, 5))
	if err != nil {
		return nil, fmt.Errorf("mcp: %w", err)
	}
	f := timeFigure(idMCPCall, "MCP computer call (move + settled screenshot, 1280×800 fitted; SDK client over a pipe, run record on)", res.samples[idMCPCall])
	act := timeFigure(idActCall, "the same call through the guest client, as agentctl act sends it", res.samples[idActCall])
	act.Peer = true
	f.Note = fmt.Sprintf("adds %.2f ms per call (median − median; goal < 1 ms)", f.P50-act.P50)
	f.compare(act)
	return []Figure{f, act}, nil
}

// connectPipes serves srv's MCP over a pair of pipes and connects the
// SDK's client to it; stop ends both.
func connectPipes(ctx context.Context, srv *mcpserver.Server) (*mcp.ClientSession, func(), error) {
	toServer, fromClient, err := os.Pipe()
	if err != nil {
		return nil, nil, err
	}
	toClient, fromServer, err := os.Pipe()
	if err != nil {
		toServer.Close()
		fromClient.Close()
		return nil, nil, err
	}
	sctx, cancel := context.WithCancel(ctx)
	served := make(chan struct{})
	go func() {
		defer close(served)
		_ = srv.Serve(sctx, &mcp.IOTransport{Reader: toServer, Writer: fromServer})
	}()
	client := mcp.NewClient(&mcp.Implementation{Name: "agentctl-bench", Version: "v0"}, nil)
	cs, err := client.Connect(ctx, &mcp.IOTransport{Reader: toClient, Writer: fromClient}, nil)
	stop := func() {
		if cs != nil {
			_ = cs.Close()
		}
		cancel()
		fromClient.Close()
		toClient.Close()
		<-served
		toServer.Close()
		fromServer.Close()
	}
	if err != nil {
		stop()
		return nil, nil, fmt.Errorf("mcp: connect: %w", err)
	}
	return cs, stop, nil
}
