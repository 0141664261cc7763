package probe

import (
	"bufio"
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"os/exec"
	"strings"
	"time"

	"github.com/agentd-dev/agentd/internal/syncbuf"
)

// helloTimeout bounds the wait for the probe's first line: an agentd built
// before the probe existed would not answer at all.
const helloTimeout = 20 * time.Second

// Client runs probes in a child process. It is not safe for concurrent use.
type Client struct {
	cmd    *exec.Cmd
	in     io.WriteCloser
	out    *bufio.Reader
	stderr *syncbuf.Buffer
	hello  Hello
}

// Start runs the probe program at path with env as its whole environment,
// and waits for its hello.
func Start(ctx context.Context, path string, env []string) (*Client, error) {
	cmd := exec.Command(path)
	cmd.Env = env
	stderr := &syncbuf.Buffer{}
	cmd.Stderr = stderr
	in, err := cmd.StdinPipe()
	if err != nil {
		return nil, fmt.Errorf("probe: %w", err)
	}
	out, err := cmd.StdoutPipe()
	if err != nil {
		return nil, fmt.Errorf("probe: %w", err)
	}
	if err := cmd.Start(); err != nil {
		return nil, fmt.Errorf("probe: start %s: %w", path, err)
	}
	c := &Client{cmd: cmd, in: in, out: bufio.NewReader(out), stderr: stderr}
	type result struct {
		line []byte
		err  error
	}
	got := make(chan result, 1)
	go func() { // ends when the line arrives or Close kills the process
		line, err := c.out.ReadBytes('\n')
		got <- result{line, err}
	}()
	timer := time.NewTimer(helloTimeout)
	defer timer.Stop()
	var r result
	select {
	case r = <-got:
	case <-ctx.Done():
		c.Close()
		return nil, fmt.Errorf("probe: waiting for hello: %w", ctx.Err())
	case <-timer.C:
		c.Close()
		return nil, fmt.Errorf("probe: %s did not answer within %v (run 'make build')", path, helloTimeout)
	}
	if r.err == nil {
		r.err = json.Unmarshal(r.line, &c.hello)
	}
	if r.err != nil {
		err := c.Close()
		return nil, fmt.Errorf("probe: %s: no hello (%w): %v", path, r.err, err)
	}
	return c, nil
}

// Hello is what the probe announced.
func (c *Client) Hello() Hello { return c.hello }

// Run runs probe name once and returns its time and output size.
func (c *Client) Run(name string) (time.Duration, int, error) {
	rep, err := c.call(Request{Probe: name})
	if err != nil {
		return 0, 0, err
	}
	return time.Duration(rep.NS), rep.Bytes, nil
}

// Allocs returns the bytes and allocations per run of probe name over n runs.
func (c *Client) Allocs(name string, n int) (bytes, allocs float64, err error) {
	rep, err := c.call(Request{Probe: name, Allocs: n})
	if err != nil {
		return 0, 0, err
	}
	return rep.AllocBytes, rep.Allocs, nil
}

func (c *Client) call(req Request) (Reply, error) {
	data, err := json.Marshal(req)
	if err != nil {
		return Reply{}, fmt.Errorf("probe %s: %w", req.Probe, err)
	}
	if _, err := c.in.Write(append(data, '\n')); err != nil {
		return Reply{}, fmt.Errorf("probe %s: send: %w%s", req.Probe, err, c.stderrTail())
	}
	line, err := c.out.ReadBytes('\n')
	if err != nil {
		return Reply{}, fmt.Errorf("probe %s: read: %w%s", req.Probe, err, c.stderrTail())
	}
	var rep Reply
	if err := json.Unmarshal(line, &rep); err != nil {
		return Reply{}, fmt.Errorf("probe %s: bad reply: %w", req.Probe, err)
	}
	if rep.Err != "" {
		return Reply{}, fmt.Errorf("probe %s: %s", req.Probe, rep.Err)
	}
	return rep, nil
}

// Close ends the probe: end of input asks it to exit; it is killed if it
// has not within a few seconds.
func (c *Client) Close() error {
	c.in.Close()
	done := make(chan error, 1)
	go func() { done <- c.cmd.Wait() }()
	select {
	case err := <-done:
		return exitError(err)
	case <-time.After(5 * time.Second):
		_ = c.cmd.Process.Kill()
		return exitError(<-done)
	}
}

func exitError(err error) error {
	var ee *exec.ExitError
	if errors.As(err, &ee) && ee.Exited() && ee.ExitCode() == 0 {
		return nil
	}
	return err
}

func (c *Client) stderrTail() string {
	s := strings.TrimSpace(c.stderr.String())
	if s == "" {
		return ""
	}
	if len(s) > 500 {
		s = "…" + s[len(s)-500:]
	}
	return " (probe said: " + s + ")"
}
