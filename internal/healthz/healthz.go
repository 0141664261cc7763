// Package healthz is the host's one probe of agentd's /healthz, which
// answers 200 while agentd can capture the screen and send input.
package healthz

import (
	"context"
	"errors"
	"fmt"
	"io"
	"net"
	"net/http"
	"time"

	"github.com/agentd-dev/agentd/internal/dialaddr"
)

// timeout bounds one probe: a forward or socket that accepts and never
// answers must not hold a caller's loop.
const timeout = 5 * time.Second

// StatusError is agentd answering /healthz with another status than 200.
type StatusError struct{ Code int }

func (e *StatusError) Error() string { return fmt.Sprintf("/healthz answered %d", e.Code) }

// Probe asks agentd at addr ("host:port" or "unix:/path", as guest.Dial
// takes) whether it is healthy: nil when /healthz answers 200, a
// *StatusError for another status, else the error of reaching it.
func Probe(ctx context.Context, addr string) error {
	return ProbeDial(ctx, dialaddr.Func(addr))
}

// ProbeDial is Probe over a connection dial makes (backend.Dialer).
func ProbeDial(ctx context.Context, dial func(context.Context) (net.Conn, error)) error {
	hc := &http.Client{Timeout: timeout, Transport: &http.Transport{
		DisableKeepAlives: true,
		DialContext:       func(ctx context.Context, _, _ string) (net.Conn, error) { return dial(ctx) },
	}}
	url := "http://agentd/healthz"
	req, err := http.NewRequestWithContext(ctx, http.MethodGet, url, nil)
	if err != nil {
		return err
	}
	resp, err := hc.Do(req)
	if err != nil {
		return err
	}
	_, _ = io.Copy(io.Discard, io.LimitReader(resp.Body, 4096))
	resp.Body.Close()
	if resp.StatusCode != http.StatusOK {
		return &StatusError{Code: resp.StatusCode}
	}
	return nil
}

// Describe says what a probe found, for people: "ok", "failing (/healthz
// answered 503)" or "unreachable: ...".
func Describe(err error) string {
	var se *StatusError
	switch {
	case err == nil:
		return "ok"
	case errors.As(err, &se):
		return "failing (" + se.Error() + ")"
	}
	return "unreachable: " + err.Error()
}
