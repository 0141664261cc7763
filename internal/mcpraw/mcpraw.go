// Package mcpraw is a minimal MCP client over a newline-delimited JSON-RPC
// stream (the stdio transport) that hands back each response's bytes
// undecoded. It measures what an MCP server costs without a client's
// decoding in the figure (agentctl bench's mcp-raw), and shows tests the
// exact bytes a server writes.
package mcpraw

import (
	"bufio"
	"bytes"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"strconv"
)

// ProtocolVersion is the MCP version the client asks for.
const ProtocolVersion = "2025-06-18"

// Client is one MCP session. Its methods must not be called concurrently.
type Client struct {
	w    io.Writer
	r    *bufio.Reader
	id   int
	line []byte
	req  []byte
}

// Start opens an MCP session with a server that reads what is written to w
// and writes to r: the initialize request, then the initialized
// notification.
func Start(r io.Reader, w io.Writer, name string) (*Client, error) {
	c := &Client{w: w, r: bufio.NewReaderSize(r, 1<<20)}
	params, err := json.Marshal(map[string]any{"protocolVersion": ProtocolVersion, "capabilities": map[string]any{},
		"clientInfo": map[string]any{"name": name, "version": "v0"}})
	if err != nil {
		return nil, err
	}
	if _, err := c.Call("initialize", params); err != nil {
		return nil, fmt.Errorf("mcpraw: initialize: %w", err)
	}
	if _, err := io.WriteString(w, `{"jsonrpc":"2.0","method":"notifications/initialized","params":{}}`+"\n"); err != nil {
		return nil, fmt.Errorf("mcpraw: initialized: %w", err)
	}
	return c, nil
}

// Call sends a request and returns the line of its response (a result or
// an error), valid until the next call; notifications before it are
// skipped. The response is recognised by how the server starts it,
// {"jsonrpc":"2.0","id":N, as the Go SDK encodes it.
func (c *Client) Call(method string, params json.RawMessage) ([]byte, error) {
	c.id++
	id := strconv.Itoa(c.id)
	c.req = append(c.req[:0], `{"jsonrpc":"2.0","id":`+id+`,"method":`...)
	c.req = strconv.AppendQuote(c.req, method)
	c.req = append(c.req, `,"params":`...)
	c.req = append(c.req, params...)
	c.req = append(c.req, "}\n"...)
	if _, err := c.w.Write(c.req); err != nil {
		return nil, err
	}
	want := []byte(`{"jsonrpc":"2.0","id":` + id + `,`)
	for {
		line, err := c.readLine()
		if err != nil {
			return nil, err
		}
		if bytes.HasPrefix(line, want) {
			return line, nil
		}
		if !bytes.HasPrefix(line, []byte(`{"jsonrpc":"2.0","method":`)) {
			return nil, fmt.Errorf("mcpraw: not the response to request %s nor a notification: %.200s", id, line)
		}
	}
}

// readLine reads one message, without its newline.
func (c *Client) readLine() ([]byte, error) {
	c.line = c.line[:0]
	for {
		part, err := c.r.ReadSlice('\n')
		if err == nil && len(c.line) == 0 {
			return bytes.TrimRight(part, "\r\n"), nil // fits the buffer: no copy
		}
		c.line = append(c.line, part...)
		switch {
		case err == nil:
			return bytes.TrimRight(c.line, "\r\n"), nil
		case errors.Is(err, bufio.ErrBufferFull):
			continue
		default:
			return nil, fmt.Errorf("mcpraw: read: %w", err)
		}
	}
}
