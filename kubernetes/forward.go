package kubernetes

import (
	"context"
	"errors"
	"fmt"
	"io"
	"net"
	"net/http"
	"strconv"
	"sync"
	"time"

	corev1 "k8s.io/api/core/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/fields"
	"k8s.io/apimachinery/pkg/util/httpstream"
	"k8s.io/apimachinery/pkg/watch"
	"k8s.io/client-go/tools/portforward"
	"k8s.io/client-go/transport/spdy"
)

// A connection to agentd goes through the API server's port-forward
// (pods/portforward): no Service, no port open anywhere but the Pod's
// loopback. Each connection is one port-forward session with one stream
// pair, as kubectl port-forward makes per accepted connection; it is
// handed out as a net.Conn through an in-memory pipe, which gives the
// caller working deadlines.

// dialTimeout bounds the port-forward's upgrade when the caller's context
// has no deadline: client-go's Dial takes no context.
const dialTimeout = 30 * time.Second

// forward opens a connection to agentd's port in the Pod. With watch, the
// connection also ends, naming the Pod and what happened to it, as soon as
// the API server says the Pod was deleted or stopped, even if the runtime
// keeps the stream open.
func (p *pod) forward(ctx context.Context, watchPod bool) (net.Conn, error) {
	url := p.cli.set.CoreV1().RESTClient().Post().Resource("pods").Namespace(p.namespace).Name(p.name).SubResource("portforward").URL()
	ws, err := portforward.NewSPDYOverWebsocketDialer(url, p.cli.config)
	if err != nil {
		return nil, p.errorf("port-forward: %w", err)
	}
	tr, upgrader, err := spdy.RoundTripperFor(p.cli.config)
	if err != nil {
		return nil, p.errorf("port-forward: %w", err)
	}
	// WebSockets first (Kubernetes 1.31+), SPDY where the server or a
	// proxy on the way refuses them, as kubectl does.
	dialer := portforward.NewFallbackDialer(ws, spdy.NewDialer(upgrader, &http.Client{Transport: tr}, http.MethodPost, url),
		func(err error) bool { return httpstream.IsUpgradeFailure(err) || httpstream.IsHTTPSProxyError(err) })

	done := make(chan dialed, 1)
	go func() {
		conn, _, err := dialer.Dial(portforward.PortForwardProtocolV1Name)
		done <- dialed{conn, err}
	}()
	bound := time.NewTimer(dialTimeout)
	defer bound.Stop()
	var streams httpstream.Connection
	select {
	case d := <-done:
		if d.err != nil {
			return nil, p.errorf("port-forward: %w", d.err)
		}
		streams = d.conn
	case <-ctx.Done():
		go closeWhenDialed(done)
		return nil, p.errorf("port-forward: %w", ctx.Err())
	case <-bound.C:
		go closeWhenDialed(done)
		return nil, p.errorf("port-forward: no answer in %v", dialTimeout)
	}

	headers := http.Header{}
	headers.Set(corev1.StreamType, corev1.StreamTypeError)
	headers.Set(corev1.PortHeader, strconv.Itoa(agentdPort))
	headers.Set(corev1.PortForwardRequestIDHeader, "0")
	errStream, err := streams.CreateStream(headers)
	if err != nil {
		streams.Close()
		return nil, p.errorf("port-forward: error stream: %w", err)
	}
	errStream.Close() // nothing is written to it
	headers.Set(corev1.StreamType, corev1.StreamTypeData)
	data, err := streams.CreateStream(headers)
	if err != nil {
		streams.Close()
		return nil, p.errorf("port-forward: data stream: %w", err)
	}

	local, remote := net.Pipe()
	c := &forwardConn{Conn: local, remote: remote, streams: streams, stop: make(chan struct{})}
	errMsg := make(chan string, 1)
	go func() {
		msg, _ := io.ReadAll(errStream)
		errMsg <- string(msg)
	}()
	go func() {
		// The caller's writes, to agentd.
		_, _ = io.Copy(data, remote)
		data.Close()
	}()
	go func() {
		// agentd's replies, to the caller; then why they ended.
		_, copyErr := io.Copy(remote, data)
		if c.closedHere() {
			return
		}
		var why error
		select {
		case msg := <-errMsg:
			if msg != "" {
				why = p.errorf("port-forward: %s", msg)
			}
		case <-time.After(time.Second):
		}
		if why == nil {
			why = p.diagnose(copyErr)
		}
		c.fail(why)
	}()
	if watchPod {
		go p.watchGone(c)
	}
	return c, nil
}

// dialed is a port-forward session's dial's result.
type dialed struct {
	conn httpstream.Connection
	err  error
}

// closeWhenDialed closes a port-forward session that was dialed after its
// caller gave up.
func closeWhenDialed(done <-chan dialed) {
	if d := <-done; d.err == nil {
		d.conn.Close()
	}
}

// watchGone ends c, saying why, when the Pod is deleted or stops running;
// it returns when c is closed.
func (p *pod) watchGone(c *forwardConn) {
	ctx, cancel := context.WithCancel(context.Background())
	defer cancel()
	go func() {
		select {
		case <-c.stop:
			cancel()
		case <-ctx.Done():
		}
	}()
	for ctx.Err() == nil {
		w, err := p.cli.set.CoreV1().Pods(p.namespace).Watch(ctx, metav1.ListOptions{
			FieldSelector: fields.OneTermEqualSelector("metadata.name", p.name).String(),
		})
		if err != nil {
			select {
			case <-ctx.Done():
			case <-time.After(time.Second):
			}
			continue
		}
		for ev := range w.ResultChan() {
			po, ok := ev.Object.(*corev1.Pod)
			if !ok {
				continue
			}
			if ev.Type == watch.Deleted {
				c.fail(p.errorf("the Pod was deleted"))
				w.Stop()
				return
			}
			if why := stopped(po); why != "" {
				c.fail(p.errorf("%s", why))
				w.Stop()
				return
			}
		}
	}
}

// diagnose says why a port-forward's stream ended, asking the API server
// about the Pod: deleted, evicted, its container ended (OOM-killed, ...).
// A Pod that runs on: the stream's own error, or io.EOF (agentd closed).
func (p *pod) diagnose(streamErr error) error {
	ctx, cancel := context.WithTimeout(context.Background(), 5*time.Second)
	defer cancel()
	po, err := p.cli.set.CoreV1().Pods(p.namespace).Get(ctx, p.name, metav1.GetOptions{})
	switch {
	case apierrors.IsNotFound(err):
		return p.errorf("the Pod was deleted")
	case err == nil:
		if why := stopped(po); why != "" {
			return p.errorf("%s", why)
		}
	}
	if streamErr != nil {
		return p.errorf("port-forward: %w", streamErr)
	}
	return io.EOF
}

// stopped says why a Pod no longer runs the guest ("" while it does):
// being deleted, evicted, its container terminated.
func stopped(po *corev1.Pod) string {
	if po.DeletionTimestamp != nil {
		return "the Pod is being deleted"
	}
	if po.Status.Reason != "" && po.Status.Phase != corev1.PodRunning && po.Status.Phase != corev1.PodPending {
		return fmt.Sprintf("the Pod %s: %s", po.Status.Reason, po.Status.Message)
	}
	for _, cs := range po.Status.InitContainerStatuses {
		if t := cs.State.Terminated; t != nil && t.ExitCode != 0 {
			return fmt.Sprintf("its %s container failed (%s, exit code %d)", cs.Name, t.Reason, t.ExitCode)
		}
	}
	for _, cs := range po.Status.ContainerStatuses {
		if t := cs.State.Terminated; t != nil {
			return fmt.Sprintf("its container ended (%s, exit code %d)", t.Reason, t.ExitCode)
		}
	}
	if po.Status.Phase == corev1.PodFailed || po.Status.Phase == corev1.PodSucceeded {
		return fmt.Sprintf("the Pod is %s", po.Status.Phase)
	}
	return ""
}

// forwardConn is the caller's end of a port-forward: a pipe whose other
// end is copied to and from the streams. Read returns why the forward
// ended (fail's error) instead of a bare io.EOF.
type forwardConn struct {
	net.Conn
	remote  net.Conn
	streams httpstream.Connection

	mu     sync.Mutex
	err    error
	closed bool
	stop   chan struct{} // closed by Close or fail
}

// fail ends the connection with err, once.
func (c *forwardConn) fail(err error) {
	c.mu.Lock()
	if c.err == nil && !c.closed {
		c.err = err
		close(c.stop)
	}
	c.mu.Unlock()
	c.remote.Close()
	c.streams.Close()
}

func (c *forwardConn) closedHere() bool {
	c.mu.Lock()
	defer c.mu.Unlock()
	return c.closed
}

func (c *forwardConn) Read(b []byte) (int, error) {
	n, err := c.Conn.Read(b)
	if errors.Is(err, io.EOF) || errors.Is(err, io.ErrClosedPipe) {
		c.mu.Lock()
		if c.err != nil && c.err != io.EOF {
			err = c.err
		}
		c.mu.Unlock()
	}
	return n, err
}

func (c *forwardConn) Write(b []byte) (int, error) {
	n, err := c.Conn.Write(b)
	if err != nil {
		c.mu.Lock()
		if c.err != nil && c.err != io.EOF {
			err = c.err
		}
		c.mu.Unlock()
	}
	return n, err
}

// Close ends the port-forward session.
func (c *forwardConn) Close() error {
	c.mu.Lock()
	if !c.closed && c.err == nil {
		close(c.stop)
	}
	c.closed = true
	c.mu.Unlock()
	err := c.Conn.Close()
	c.remote.Close()
	c.streams.Close()
	return err
}
