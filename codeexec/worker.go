package codeexec

import (
	"bytes"
	"encoding/binary"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"os"
	"os/exec"
	"path/filepath"
	"sync"
	"syscall"
	"time"
)

// maxFrameHead and maxFramePayload bound one frame from the worker: a
// header is a small JSON object, a payload at most one RGBA image of the
// largest screen agentd captures.
const (
	maxFrameHead    = 1 << 20
	maxFramePayload = 256 << 20
)

// frame is one message from the worker.
type frame struct {
	head    message
	payload []byte
}

// message is the header of a worker frame; which fields are set depends on Op.
type message struct {
	Op        string          `json:"op"`
	Text      string          `json:"text"`      // out
	Error     string          `json:"error"`     // sandbox
	Traceback string          `json:"traceback"` // done
	Format    string          `json:"format"`    // image: "rgba" or "png"
	Width     int             `json:"width"`     // image (rgba)
	Height    int             `json:"height"`    // image (rgba)
	Action    json.RawMessage `json:"action"`    // act
	Failsafe  bool            `json:"failsafe"`  // act, hold, wheel
	Down      bool            `json:"down"`      // hold
	Key       string          `json:"key"`       // hold
	Button    string          `json:"button"`    // hold
	X         *int            `json:"x"`         // wheel
	Y         *int            `json:"y"`         // wheel
	StepsX    int             `json:"steps_x"`   // wheel
	StepsY    int             `json:"steps_y"`   // wheel
}

// worker is one python3 process and the pipes to it.
type worker struct {
	cmd    *exec.Cmd
	toW    *os.File // fd 3 of the worker
	fromW  *os.File // fd 4 of the worker
	frames chan frame
	quit   chan struct{}
	reader sync.WaitGroup

	readErr error // set before frames is closed
}

// env is the worker's whole environment: nothing of agentd's own.
func env(home string) []string {
	return []string{
		"PATH=/usr/local/bin:/usr/bin:/bin",
		"HOME=" + home,
		"LANG=C.UTF-8",
		"PYTHONIOENCODING=utf-8",
		"PYTHONDONTWRITEBYTECODE=1",
	}
}

func startWorker(python, dir string, hide []string, stdio *tailBuffer) (*worker, error) {
	toR, toW, err := os.Pipe()
	if err != nil {
		return nil, fmt.Errorf("worker pipe: %w", err)
	}
	fromR, fromW, err := os.Pipe()
	if err != nil {
		toR.Close()
		toW.Close()
		return nil, fmt.Errorf("worker pipe: %w", err)
	}
	work := filepath.Join(dir, "work")
	cmd := exec.Command(python, append([]string{"-I", filepath.Join(dir, "lib", "worker.py")}, hide...)...)
	cmd.Dir = work
	cmd.Env = env(work)
	cmd.ExtraFiles = []*os.File{toR, fromW}
	cmd.Stdout, cmd.Stderr = stdio, stdio
	cmd.SysProcAttr = workerSysProcAttr()
	// A child the code left behind holding stdout must not hold up Wait.
	cmd.WaitDelay = time.Second
	err = cmd.Start()
	toR.Close()
	fromW.Close()
	if err != nil {
		toW.Close()
		fromR.Close()
		return nil, fmt.Errorf("start %s: %w", python, err)
	}
	w := &worker{cmd: cmd, toW: toW, fromW: fromR, frames: make(chan frame, 8), quit: make(chan struct{})}
	w.reader.Add(1)
	go w.read()
	return w, nil
}

// read forwards the worker's frames until its pipe ends or stop is called.
func (w *worker) read() {
	defer w.reader.Done()
	defer close(w.frames)
	for {
		f, err := readFrame(w.fromW)
		if err != nil {
			w.readErr = err
			return
		}
		select {
		case w.frames <- f:
		case <-w.quit:
			return
		}
	}
}

// readFrame reads one frame. The worker runs the model's code, which can
// write anything to its pipe: a frame over the limits or not JSON is an
// error, and the worker is stopped.
func readFrame(r io.Reader) (frame, error) {
	var hdr [8]byte
	if _, err := io.ReadFull(r, hdr[:]); err != nil {
		return frame{}, err
	}
	hl, pl := binary.BigEndian.Uint32(hdr[:4]), binary.BigEndian.Uint32(hdr[4:])
	if hl > maxFrameHead || pl > maxFramePayload {
		return frame{}, fmt.Errorf("worker frame of %d+%d bytes is over the limit", hl, pl)
	}
	buf := make([]byte, int(hl)+int(pl))
	if _, err := io.ReadFull(r, buf); err != nil {
		return frame{}, err
	}
	var f frame
	if err := json.Unmarshal(buf[:hl], &f.head); err != nil {
		return frame{}, fmt.Errorf("malformed worker frame: %w", err)
	}
	f.payload = buf[hl:]
	return f, nil
}

// send writes one frame to the worker.
func (w *worker) send(head any, payload []byte) error {
	j, err := json.Marshal(head)
	if err != nil {
		return err
	}
	var hdr [8]byte
	binary.BigEndian.PutUint32(hdr[:4], uint32(len(j)))
	binary.BigEndian.PutUint32(hdr[4:], uint32(len(payload)))
	if _, err := w.toW.Write(append(hdr[:], j...)); err != nil {
		return fmt.Errorf("write to the worker: %w", err)
	}
	if len(payload) > 0 {
		if _, err := w.toW.Write(payload); err != nil {
			return fmt.Errorf("write to the worker: %w", err)
		}
	}
	return nil
}

// stop kills the worker's process group and waits for it and its reader.
// It returns how the process ended.
func (w *worker) stop() error {
	close(w.quit)
	_ = syscall.Kill(-w.cmd.Process.Pid, syscall.SIGKILL)
	w.toW.Close()
	err := w.cmd.Wait()
	w.fromW.Close()
	w.reader.Wait()
	return err
}

// exitReason describes why a worker ended on its own.
func exitReason(waitErr error, stdio *tailBuffer) string {
	msg := "the Python worker exited"
	var ee *exec.ExitError
	if errors.As(waitErr, &ee) {
		msg += " (" + ee.ProcessState.String() + ")"
	}
	if tail := bytes.TrimSpace(stdio.Bytes()); len(tail) > 0 {
		msg += ": " + string(tail)
	}
	return msg
}

// tailBuffer keeps the last max bytes written to it, and separately what
// was written since the last Take (its first max bytes).
type tailBuffer struct {
	mu      sync.Mutex
	max     int
	b       []byte
	fresh   []byte
	dropped int
}

func (t *tailBuffer) Write(p []byte) (int, error) {
	t.mu.Lock()
	defer t.mu.Unlock()
	t.b = append(t.b, p...)
	if len(t.b) > t.max {
		t.b = append(t.b[:0], t.b[len(t.b)-t.max:]...)
	}
	n := min(len(p), t.max-len(t.fresh))
	t.fresh = append(t.fresh, p[:n]...)
	t.dropped += len(p) - n
	return len(p), nil
}

// Take returns what was written since the last Take, and how many bytes
// beyond max were dropped.
func (t *tailBuffer) Take() ([]byte, int) {
	t.mu.Lock()
	defer t.mu.Unlock()
	b, d := t.fresh, t.dropped
	t.fresh, t.dropped = nil, 0
	return b, d
}

func (t *tailBuffer) Bytes() []byte {
	t.mu.Lock()
	defer t.mu.Unlock()
	return append([]byte(nil), t.b...)
}
