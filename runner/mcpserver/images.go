package mcpserver

import (
	"bytes"
	"cmp"
	"context"
	"crypto/rand"
	"encoding/base64"
	"io"
	"net/http"
	"slices"
	"sync"

	"github.com/modelcontextprotocol/go-sdk/mcp"
)

// The images of a result reach the client without the SDK encoding them.
//
// The SDK marshals a tool's result with encoding/json before its transport
// sees the message: an image's bytes become base64 in a reflect-based
// marshal, and that string is scanned twice more (the content's
// MarshalJSON output compacted into the result, the result compacted into
// the JSON-RPC message), most of the server's CPU per screenshot.
// mcp.Content cannot be implemented outside the SDK, so a result cannot
// be handed over already encoded. Instead, on the transports this package
// serves (Serve, Handler), each image of a result goes to the SDK as a
// placeholder: random bytes, a short base64 string in the message. The
// writer under the SDK's connection, which gets each message whole (one
// Write per message on a stream, one per event or JSON body over HTTP),
// writes the image's base64 in the placeholder's place, straight from the
// bytes into one buffer. The bytes on the wire are exactly the SDK's own:
// encoding/json writes []byte as standard base64, which JSON never escapes
// (TestImagesExact compares them).

// placeholderLen is a placeholder's bytes: 24 random bytes are 32 base64
// characters without padding, and no one can guess them into a message.
const placeholderLen = 24

var placeholderChars = base64.StdEncoding.EncodedLen(placeholderLen)

// images holds the images whose placeholders are on their way to a writer.
type images struct {
	mu      sync.Mutex
	pending map[string]pendingImage // by the placeholder's JSON string, quotes included
}

type pendingImage struct {
	data  []byte
	owner *session
}

// splicedKey marks a context whose connection writes through images.
type splicedKey struct{}

func withSplice(ctx context.Context) context.Context {
	return context.WithValue(ctx, splicedKey{}, true)
}

// stand returns res with each image standing in as a placeholder, when the
// call's connection writes through im; else res itself. x owns them: its
// end forgets those never written (a response the transport dropped).
func (im *images) stand(ctx context.Context, x *session, res *mcp.CallToolResult) *mcp.CallToolResult {
	if ctx.Value(splicedKey{}) == nil || res == nil {
		return res
	}
	var out *mcp.CallToolResult
	for i, c := range res.Content {
		img, ok := c.(*mcp.ImageContent)
		if !ok || len(img.Data) == 0 {
			continue
		}
		if out == nil {
			cp := *res
			cp.Content = slices.Clone(res.Content)
			out = &cp
		}
		ph := make([]byte, placeholderLen)
		_, _ = rand.Read(ph) // never fails (crypto/rand)
		key := `"` + base64.StdEncoding.EncodeToString(ph) + `"`
		im.mu.Lock()
		if im.pending == nil {
			im.pending = map[string]pendingImage{}
		}
		im.pending[key] = pendingImage{data: img.Data, owner: x}
		im.mu.Unlock()
		stand := *img
		stand.Data = ph
		out.Content[i] = &stand
	}
	if out == nil {
		return res
	}
	return out
}

// drop forgets x's images still pending.
func (im *images) drop(x *session) {
	im.mu.Lock()
	defer im.mu.Unlock()
	for k, p := range im.pending {
		if p.owner == x {
			delete(im.pending, k)
		}
	}
}

type splice struct {
	at   int // the placeholder's opening quote in the message
	data []byte
}

// splices finds the pending placeholders in msg, in order, and forgets
// them: each is written once.
func (im *images) splices(msg []byte) []splice {
	im.mu.Lock()
	defer im.mu.Unlock()
	var out []splice
	for k, p := range im.pending {
		if i := bytes.Index(msg, []byte(k)); i >= 0 {
			out = append(out, splice{at: i, data: p.data})
			delete(im.pending, k)
		}
	}
	slices.SortFunc(out, func(a, b splice) int { return cmp.Compare(a.at, b.at) })
	return out
}

// bufs are the messages with their images, reused: a screenshot's message
// is hundreds of kilobytes.
var bufs sync.Pool

// write writes msg to w with its placeholders replaced by their images'
// base64, in one Write.
func (im *images) write(w io.Writer, msg []byte) (int, error) {
	ss := im.splices(msg)
	if len(ss) == 0 {
		return w.Write(msg)
	}
	n := len(msg)
	for _, s := range ss {
		n += base64.StdEncoding.EncodedLen(len(s.data)) - placeholderChars
	}
	bp, _ := bufs.Get().(*[]byte)
	if bp == nil {
		bp = new([]byte)
	}
	out := slices.Grow((*bp)[:0], n)
	last := 0
	for _, s := range ss {
		out = append(out, msg[last:s.at+1]...)
		out = base64.StdEncoding.AppendEncode(out, s.data)
		last = s.at + 1 + placeholderChars
	}
	out = append(out, msg[last:]...)
	_, err := w.Write(out)
	*bp = out
	bufs.Put(bp)
	if err != nil {
		return 0, err
	}
	return len(msg), nil
}

// splicingWriter is a stream's writing end under the SDK's connection.
type splicingWriter struct {
	im *images
	w  io.WriteCloser
}

func (s splicingWriter) Write(p []byte) (int, error) { return s.im.write(s.w, p) }
func (s splicingWriter) Close() error                { return s.w.Close() }

// splicingResponse is an HTTP response under the SDK's Streamable HTTP
// handler; Unwrap lets http.ResponseController flush the one below.
type splicingResponse struct {
	http.ResponseWriter
	im *images
}

func (s splicingResponse) Write(p []byte) (int, error) { return s.im.write(s.ResponseWriter, p) }
func (s splicingResponse) Unwrap() http.ResponseWriter { return s.ResponseWriter }
