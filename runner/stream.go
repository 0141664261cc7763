package runner

import (
	"context"
	"errors"
	"fmt"

	"github.com/openai/openai-go/v3/option"
	"github.com/openai/openai-go/v3/responses"
)

// Streaming asks each response as a stream of Server-Sent Events. Calls
// still run only once the response is complete: a partial stream starts
// nothing.
type Streaming struct {
	// OnEvent observes every stream event, synchronously and in order.
	// Each call gets its own copy, decoded afresh from the wire, so an
	// observer that changes it changes nothing the runner uses. Panics
	// are ignored.
	OnEvent func(responses.ResponseStreamEventUnion)
}

// errStreamEnded is a stream that stopped before its final event.
var errStreamEnded = errors.New("the stream ended before the response was complete")

// create sends one request: a plain one, or a stream read to its final
// event when opts.Stream is set.
func (l *loop) create(ctx context.Context, opts *RunOptions, params responses.ResponseNewParams, requestOptions []option.RequestOption) (*responses.Response, error) {
	if opts.Stream == nil {
		return l.responses.New(ctx, params, requestOptions...)
	}
	stream := l.responses.NewStreaming(ctx, params, requestOptions...)
	defer stream.Close()
	for stream.Next() {
		ev := stream.Current()
		if opts.Stream.OnEvent != nil {
			var c responses.ResponseStreamEventUnion
			if err := c.UnmarshalJSON([]byte(ev.RawJSON())); err == nil {
				observe(opts.Stream.OnEvent, c)
			}
		}
		switch ev.Type {
		case "response.completed", "response.incomplete", "response.failed":
			resp := ev.Response
			return &resp, nil
		case "error":
			return nil, fmt.Errorf("stream error %s: %s", ev.Code, ev.Message)
		}
	}
	if err := stream.Err(); err != nil {
		return nil, fmt.Errorf("stream: %w", err)
	}
	return nil, errStreamEnded
}
