package bench

import (
	"bytes"
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"os"
	"time"

	"github.com/modelcontextprotocol/go-sdk/mcp"

	"github.com/agentd-dev/agentd/actions"
	"github.com/agentd-dev/agentd/actions/wire"
	"github.com/agentd-dev/agentd/internal/mcpraw"
	"github.com/agentd-dev/agentd/runner/computer"
	"github.com/agentd-dev/agentd/runner/mcpserver"
)

const (
	idMCPRaw  = "mcp-raw"
	idMCPCall = "mcp-call"
	idActCall = "act-call"
)

// measureMCP times the MCP server's own cost per computer call: one mouse
// move and its settled screenshot in a 1280×800 fitted view, asked of
// agentctl mcp's server (mcpserver, its run record written, as agentctl mcp
// does by default) over a pair of pipes, as a stdio client does. mcp-raw
// asks with a client that reads the response's bytes without decoding them
// (mcpraw), so that its difference from act-call is the server's own cost;
// mcp-call asks with the SDK's client, which decodes the message and the
// image's base64, as an agent's client does. Next to them, in interleaved
// rounds, the same call straight through the guest client, as agentctl act
// sends it (without act's process start and dial). The servers drive the
// bench's own client: agentd has one controller at a time.
func (b *sizeBench) measureMCP(ctx context.Context) ([]Figure, error) {
	view := wire.View{Width: 1280, Height: 800, Fit: true}
	defer b.client.SetView(nativeView)
	records, err := os.MkdirTemp("", "agentd-bench-mcp-")
	if err != nil {
		return nil, err
	}
	defer os.RemoveAll(records)
	serve := func() (io.ReadCloser, io.WriteCloser, func(), error) {
		srv, err := mcpserver.New(mcpserver.Config{View: view, RecordDir: records,
			Open: func(context.Context) (*mcpserver.Desktop, error) {
				return &mcpserver.Desktop{Client: b.client, Addr: "bench", Close: func() {}}, nil
			}})
		if err != nil {
			return nil, nil, nil, err
		}
		return srv.ServePipes(ctx)
	}
	r, w, stopRaw, err := serve()
	if err != nil {
		return nil, err
	}
	defer stopRaw()
	raw, err := mcpraw.Start(r, w, "agentctl-bench")
	if err != nil {
		return nil, err
	}
	r, w, stopSDK, err := serve()
	if err != nil {
		return nil, err
	}
	defer stopSDK()
	cs, err := mcp.NewClient(&mcp.Implementation{Name: "agentctl-bench", Version: "v0"}, nil).Connect(ctx, &mcp.IOTransport{Reader: r, Writer: w}, nil)
	if err != nil {
		return nil, fmt.Errorf("mcp: connect: %w", err)
	}
	defer cs.Close()

	// The pointer alternates between two points, so each move moves it.
	pts := [2][2]int{{100, 100}, {400, 300}} // inside the image at every size the bench measures (800x600 too)
	n := 0
	next := func() (int, int) { n++; p := pts[n%2]; return p[0], p[1] }
	args := func() string {
		x, y := next()
		return fmt.Sprintf(`{"actions":[{"type":"move","x":%d,"y":%d}]}`, x, y)
	}
	contenders := []contender{
		{id: idMCPRaw, run: func(ctx context.Context) (time.Duration, error) {
			params := json.RawMessage(`{"name":"` + mcpserver.ComputerToolName + `","arguments":` + args() + `}`)
			start := time.Now()
			line, err := raw.Call("tools/call", params)
			d := time.Since(start)
			// The answer is checked without decoding it: a result (not an
			// error) holding an image.
			if err == nil && (!bytes.Contains(line, []byte(`"result":`)) || bytes.Contains(line, []byte(`"isError":true`)) ||
				!bytes.Contains(line, []byte(`"type":"image"`))) {
				err = fmt.Errorf("not a screenshot: %.300s", line)
			}
			return d, err
		}},
		{id: idMCPCall, run: func(ctx context.Context) (time.Duration, error) {
			params := &mcp.CallToolParams{Name: mcpserver.ComputerToolName, Arguments: json.RawMessage(args())}
			start := time.Now()
			res, err := cs.CallTool(ctx, params)
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
	// The MCP contenders run first: their sessions' first calls set the
	// view all use.
	res, err := runRounds(ctx, contenders, turns(b.duration, 5))
	if err != nil {
		return nil, fmt.Errorf("mcp: %w", err)
	}
	act := timeFigure(idActCall, "the same call through the guest client, as agentctl act sends it", res.samples[idActCall])
	act.Peer = true
	own := timeFigure(idMCPRaw, "MCP computer call (move + settled screenshot, 1280×800 fitted; over a pipe, run record on), the response read undecoded: the server's own cost", res.samples[idMCPRaw])
	own.Note = fmt.Sprintf("the server adds %.2f ms per call (median − median; goal < 1 ms)", own.P50-act.P50)
	own.compare(act)
	sdk := timeFigure(idMCPCall, "the same MCP call from the SDK's client, which decodes the response", res.samples[idMCPCall])
	sdk.Note = fmt.Sprintf("adds %.2f ms per call with the SDK client's decoding (median − median)", sdk.P50-act.P50)
	sdk.compare(act)
	return []Figure{own, sdk, act}, nil
}
