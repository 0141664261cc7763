package kubernetes

import (
	"bytes"
	"context"
	"errors"
	"fmt"
	"io"
	"io/fs"
	"net"
	"net/http"
	"os"
	"path"
	"path/filepath"
	"slices"
	"strings"
	"sync"
	"time"

	corev1 "k8s.io/api/core/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/fields"
	"k8s.io/apimachinery/pkg/util/httpstream"
	"k8s.io/client-go/kubernetes/scheme"
	"k8s.io/client-go/tools/remotecommand"
	utilexec "k8s.io/client-go/util/exec"

	"github.com/agentd-dev/agentd/guest/backend"
	"github.com/agentd-dev/agentd/internal/healthz"
	"github.com/agentd-dev/agentd/internal/limitbuf"
	"github.com/agentd-dev/agentd/internal/statedir"
)

// MaxReadFile bounds what ReadFile returns.
const MaxReadFile = 64 << 20

// pod is one guest's Pod and what this process keeps of it: the token's
// copy, read by the host's client.
type pod struct {
	cli             *clients
	namespace, name string
	// stateDir is this host's private directory of the guest (0700): the
	// token's copy (TokenFile), removed by Down.
	stateDir  string
	tokenFile string
	// marks are this host's moments of Up (see StartMilestones).
	marks []backend.Milestone

	downOnce sync.Once
	downErr  error
}

// errorf is an error naming the Pod.
func (p *pod) errorf(format string, args ...any) error {
	return fmt.Errorf("kubernetes guest pod %s/%s: %w", p.namespace, p.name, fmt.Errorf(format, args...))
}

// stateRoot holds the guests' private directories on this host:
// $XDG_RUNTIME_DIR/agentd-kubernetes, else <tmp>/agentd-kubernetes-<uid>.
func stateRoot() (string, error) { return statedir.Root("agentd-kubernetes") }

// keepToken writes the token into the guest's private directory on this
// host, for the description's TokenFile.
func (p *pod) keepToken(token string) error {
	root, err := stateRoot()
	if err != nil {
		return err
	}
	p.stateDir = filepath.Join(root, p.namespace+"."+p.name)
	if err := os.MkdirAll(p.stateDir, 0o700); err != nil {
		return p.errorf("state directory: %w", err)
	}
	p.tokenFile = filepath.Join(p.stateDir, tokenName)
	tmp := p.tokenFile + ".tmp"
	if err := os.WriteFile(tmp, []byte(token+"\n"), 0o600); err != nil {
		return p.errorf("token file: %w", err)
	}
	return os.Rename(tmp, p.tokenFile)
}

// healthz asks agentd's /healthz through the port-forward: nil for 200.
func (p *pod) healthz(ctx context.Context) error {
	return healthz.ProbeDial(ctx, func(ctx context.Context) (net.Conn, error) { return p.forward(ctx, false) })
}

// get reads the Pod.
func (p *pod) get(ctx context.Context) (*corev1.Pod, error) {
	return p.cli.set.CoreV1().Pods(p.namespace).Get(ctx, p.name, metav1.GetOptions{})
}

// events are the Pod's events, oldest first, one a line, for an error.
func (p *pod) events(ctx context.Context) string {
	list, err := p.cli.set.CoreV1().Events(p.namespace).List(ctx, metav1.ListOptions{
		FieldSelector: fields.AndSelectors(
			fields.OneTermEqualSelector("involvedObject.kind", "Pod"),
			fields.OneTermEqualSelector("involvedObject.name", p.name),
		).String(),
	})
	if err != nil {
		return "(its events could not be read: " + err.Error() + ")"
	}
	items := list.Items
	slices.SortStableFunc(items, func(a, b corev1.Event) int { return eventTime(a).Compare(eventTime(b)) })
	var b strings.Builder
	for _, e := range items {
		fmt.Fprintf(&b, "  %s %s: %s", e.Type, e.Reason, strings.TrimSpace(e.Message))
		if e.Count > 1 {
			fmt.Fprintf(&b, " (x%d)", e.Count)
		}
		b.WriteByte('\n')
	}
	if b.Len() == 0 {
		return "  (no events)\n"
	}
	return b.String()
}

func eventTime(e corev1.Event) time.Time {
	switch {
	case !e.LastTimestamp.IsZero():
		return e.LastTimestamp.Time
	case !e.EventTime.IsZero():
		return e.EventTime.Time
	}
	return e.CreationTimestamp.Time
}

// Logs returns the desktop's last n lines of output (n ≤ 0: all).
func (p *pod) Logs(ctx context.Context, n int) (string, error) {
	opts := &corev1.PodLogOptions{Container: containerName}
	if n > 0 {
		tail := int64(n)
		opts.TailLines = &tail
	}
	data, err := p.cli.set.CoreV1().Pods(p.namespace).GetLogs(p.name, opts).Do(ctx).Raw()
	if err != nil {
		return "", p.errorf("logs: %w", err)
	}
	return string(data), nil
}

// ReadFile returns a file of the running guest (an absolute path in the
// container), read by the container's user through the API server's exec:
// agentd itself offers no file access. A missing file gives an error
// wrapping fs.ErrNotExist.
func (p *pod) ReadFile(ctx context.Context, file string) ([]byte, error) {
	if !path.IsAbs(file) {
		return nil, p.errorf("read %q: want an absolute path", file)
	}
	out := &limitbuf.Buffer{Max: MaxReadFile}
	var errOut bytes.Buffer
	err := p.exec(ctx, []string{"cat", "--", file}, out, &errOut)
	var exit utilexec.CodeExitError
	switch {
	case errors.As(err, &exit):
		msg := strings.TrimSpace(errOut.String())
		if strings.Contains(msg, "No such file or directory") {
			return nil, p.errorf("read %s: %w", file, fs.ErrNotExist)
		}
		return nil, p.errorf("read %s: cat exited %d: %s", file, exit.Code, msg)
	case err != nil:
		return nil, p.errorf("read %s: %w", file, err)
	}
	return out.Bytes(), nil
}

// exec runs cmd in the guest's container through the API server
// (pods/exec), WebSockets first, SPDY as a fallback.
func (p *pod) exec(ctx context.Context, cmd []string, stdout, stderr io.Writer) error {
	req := p.cli.set.CoreV1().RESTClient().Post().Resource("pods").Namespace(p.namespace).Name(p.name).SubResource("exec").
		VersionedParams(&corev1.PodExecOptions{Container: containerName, Command: cmd, Stdout: true, Stderr: true}, scheme.ParameterCodec)
	ws, err := remotecommand.NewWebSocketExecutor(p.cli.config, http.MethodGet, req.URL().String())
	if err != nil {
		return err
	}
	sp, err := remotecommand.NewSPDYExecutor(p.cli.config, http.MethodPost, req.URL())
	if err != nil {
		return err
	}
	ex, err := remotecommand.NewFallbackExecutor(ws, sp, func(err error) bool {
		return httpstream.IsUpgradeFailure(err) || httpstream.IsHTTPSProxyError(err)
	})
	if err != nil {
		return err
	}
	return ex.StreamWithContext(ctx, remotecommand.StreamOptions{Stdout: stdout, Stderr: stderr})
}

// StartMilestones returns the moments of Up, in time order: this host's
// (up: Up called; created: the Pod was created; running: its container
// started; ready: agentd answered through the port-forward) and the
// entrypoint's, read from the Pod's log (begin, xvfb, openbox, the
// applications, agentd-started: docker/entrypoint.sh's marks, at the
// node's clock). A guest from Open has none of this host's.
func (p *pod) StartMilestones(ctx context.Context) ([]backend.Milestone, error) {
	logs, err := p.Logs(ctx, 0)
	if err != nil {
		return nil, err
	}
	ms, err := backend.ImageMilestones(p.marks, logs)
	if err != nil {
		return nil, p.errorf("%w", err)
	}
	return ms, nil
}

// Down deletes the Pod, its Secret, NetworkPolicy and ConfigMap, waits
// until the Pod is gone, and removes this host's copy of the token. A Pod
// that is gone already is no error. Later calls return the first's
// result.
func (p *pod) Down(ctx context.Context) error {
	p.downOnce.Do(func() { p.downErr = p.teardown(ctx) })
	return p.downErr
}

func (p *pod) teardown(ctx context.Context) error {
	var errs []error
	grace := int64(10)
	pods := p.cli.set.CoreV1().Pods(p.namespace)
	err := pods.Delete(ctx, p.name, metav1.DeleteOptions{GracePeriodSeconds: &grace})
	if err != nil && !apierrors.IsNotFound(err) {
		errs = append(errs, fmt.Errorf("delete the Pod: %w", err))
	}
	del := func(what string, f func(context.Context, string, metav1.DeleteOptions) error) {
		if err := f(ctx, p.name, metav1.DeleteOptions{}); err != nil && !apierrors.IsNotFound(err) {
			errs = append(errs, fmt.Errorf("delete the %s: %w", what, err))
		}
	}
	del("Secret", p.cli.set.CoreV1().Secrets(p.namespace).Delete)
	del("NetworkPolicy", p.cli.set.NetworkingV1().NetworkPolicies(p.namespace).Delete)
	del("ConfigMap", p.cli.set.CoreV1().ConfigMaps(p.namespace).Delete)
	if err == nil {
		if err := p.waitGone(ctx, time.Duration(grace)*time.Second+30*time.Second); err != nil {
			errs = append(errs, err)
		}
	}
	if p.stateDir != "" {
		if err := os.RemoveAll(p.stateDir); err != nil {
			errs = append(errs, fmt.Errorf("remove the state directory: %w", err))
		}
	}
	if err := errors.Join(errs...); err != nil {
		return p.errorf("down: %w", err)
	}
	return nil
}

// waitGone waits until the Pod object is gone: its containers ended and the
// kubelet let it go.
func (p *pod) waitGone(ctx context.Context, bound time.Duration) error {
	ctx, cancel := context.WithTimeout(ctx, bound)
	defer cancel()
	for {
		_, err := p.get(ctx)
		if apierrors.IsNotFound(err) {
			return nil
		}
		select {
		case <-ctx.Done():
			return fmt.Errorf("the Pod is still there after %v: %w", bound, ctx.Err())
		case <-time.After(250 * time.Millisecond):
		}
	}
}
