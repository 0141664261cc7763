package codeexec

import (
	"bytes"
	"context"
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

// Limits of the frames the worker writes. The worker runs the model's code,
// which can write anything to its pipe, so every frame is capped by its
// kind before agentd allocates it: a header is a small JSON object, and only
// an image carries a payload. The worker's own module keeps within them
// (printed text goes in chunks, a traceback is cut, display() refuses larger
// images); a frame over them stops the worker.
const (
	// maxFrameHead is the largest header of any kind.
	maxFrameHead = 256 << 10
	// MaxDisplayPixels bounds one display() image (4096×4096): its RGBA
	// payload, and what a PNG may decode to.
	MaxDisplayPixels = 1 << 24
	maxImagePayload  = 4 * MaxDisplayPixels
	// Text of one "out" frame, and of a traceback, in characters: the
	// worker's chunks, with room for JSON's escapes.
	outChunkChars  = 8 << 10
	tracebackChars = 16 << 10
)

// frameLimit is the largest header and payload of one kind of frame.
type frameLimit struct {
	Head    int `json:"head"`
	Payload int `json:"payload"`
}

// frameLimits holds each kind's; a kind not listed gets smallFrame (and an
// error reply, as an unknown request).
var (
	smallFrame  = frameLimit{Head: 4 << 10}
	frameLimits = map[string]frameLimit{
		"out":        {Head: 64 << 10},
		"done":       {Head: 128 << 10},
		"sandbox":    {Head: 16 << 10},
		"ready":      smallFrame,
		"image":      {Head: 4 << 10, Payload: maxImagePayload},
		"act":        {Head: maxFrameHead},
		"wheel":      smallFrame,
		"hold":       smallFrame,
		"position":   smallFrame,
		"screenshot": smallFrame,
	}
)

func limitOf(op string) frameLimit {
	if l, ok := frameLimits[op]; ok {
		return l
	}
	return smallFrame
}

// frameError is a frame agentd refuses: the worker broke the protocol.
type frameError struct{ msg string }

func (e *frameError) Error() string { return e.msg }

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
	cmd   *exec.Cmd
	toW   *os.File // fd 3 of the worker
	fromW *os.File // fd 4 of the worker
	// frames is unbuffered: the reader holds at most one frame beyond the
	// one being served, so a worker never makes agentd hold more.
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

// Limits of a worker and of each process it starts (setrlimit, soft and
// hard alike, so the code cannot raise them): CPU time, address space, the
// size of a file it writes, open files, no core files; and at most
// ExtraTasks processes and threads beyond those its user already runs when
// the worker starts (RLIMIT_NPROC counts all of the user's).
const (
	LimitCPUSeconds   = 3600
	LimitAddressSpace = 4 << 30
	LimitFileSize     = 1 << 30
	LimitOpenFiles    = 1024
	LimitExtraTasks   = 256
	// NobodyID is the user and group a worker runs as when agentd is root.
	NobodyID = 65534
	// stopTimeout bounds how long the keeper may take to end its subtree,
	// startTimeout how long a worker may take to be ready.
	stopTimeout  = 10 * time.Second
	startTimeout = 60 * time.Second
)

// workerConfig is worker.py's one argument.
type workerConfig struct {
	Frames         map[string]frameLimit `json:"frames"`
	OutChunk       int                   `json:"out_chunk"`
	DisplayPixels  int                   `json:"display_pixels"`
	TracebackChars int                   `json:"traceback_chars"`
}

// keeperConfig is reaper.py's one argument.
type keeperConfig struct {
	Python     string         `json:"python"`
	Worker     []string       `json:"worker"` // worker.py's path and argument
	Agentd     int            `json:"agentd"` // agentd's pid
	Hide       []string       `json:"hide"`
	UID        *int           `json:"uid,omitempty"`
	GID        *int           `json:"gid,omitempty"`
	Rlimits    map[string]int `json:"rlimits"`
	NprocExtra int            `json:"nproc_extra"`
}

// startWorker starts the worker's keeper (reaper.py), which starts the
// worker in its sandbox.
func startWorker(opts *Options, dir string, stdio *tailBuffer) (*worker, error) {
	wcfg, err := json.Marshal(workerConfig{Frames: frameLimits, OutChunk: outChunkChars,
		DisplayPixels: MaxDisplayPixels, TracebackChars: tracebackChars})
	if err != nil {
		return nil, fmt.Errorf("worker configuration: %w", err)
	}
	kcfg := keeperConfig{
		Python: opts.Python,
		Worker: []string{filepath.Join(dir, "lib", "worker.py"), string(wcfg)},
		Agentd: os.Getpid(),
		Hide:   append([]string{}, opts.Hide...),
		Rlimits: map[string]int{"cpu": LimitCPUSeconds, "as": LimitAddressSpace, "fsize": LimitFileSize,
			"nofile": LimitOpenFiles, "core": 0},
		NprocExtra: LimitExtraTasks,
	}
	if os.Geteuid() == 0 {
		id := NobodyID
		kcfg.UID, kcfg.GID = &id, &id
	}
	cfg, err := json.Marshal(kcfg)
	if err != nil {
		return nil, fmt.Errorf("worker configuration: %w", err)
	}
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
	cmd := exec.Command(opts.Python, "-I", filepath.Join(dir, "lib", "reaper.py"), string(cfg))
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
		return nil, fmt.Errorf("start %s: %w", opts.Python, err)
	}
	w := &worker{cmd: cmd, toW: toW, fromW: fromR, frames: make(chan frame), quit: make(chan struct{})}
	w.reader.Add(1)
	go w.read()
	return w, nil
}

// ready waits for the worker's first frame, "ready", logging a weaker
// sandbox on the way; a worker that ends or stalls first is stopped, and
// the error says why.
func (w *worker) ready(ctx context.Context, stdio *tailBuffer, logf func(string, ...any)) error {
	t := time.NewTimer(startTimeout)
	defer t.Stop()
	for {
		select {
		case f, ok := <-w.frames:
			switch {
			case !ok:
				err := w.stop()
				var fe *frameError
				if errors.As(w.readErr, &fe) {
					return fe
				}
				return errors.New(exitReason(err, stdio))
			case f.head.Op == "sandbox":
				logf("code: the worker's sandbox is weaker than documented: %s", f.head.Error)
			case f.head.Op == "ready":
				return nil
			default:
				_ = w.stop()
				return fmt.Errorf("the worker sent %q before it was ready", f.head.Op)
			}
		case <-t.C:
			_ = w.stop()
			return fmt.Errorf("the Python worker was not ready within %s", startTimeout)
		case <-ctx.Done():
			_ = w.stop()
			return ctx.Err()
		}
	}
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

// readFrame reads one frame, never allocating more than its kind allows:
// the header's length is checked before it is read, the payload's once
// the header says what the frame is.
func readFrame(r io.Reader) (frame, error) {
	var hdr [8]byte
	if _, err := io.ReadFull(r, hdr[:]); err != nil {
		return frame{}, err
	}
	hl, pl := binary.BigEndian.Uint32(hdr[:4]), binary.BigEndian.Uint32(hdr[4:])
	if hl > maxFrameHead {
		return frame{}, &frameError{fmt.Sprintf("the worker wrote a frame with a %d-byte header; agentd takes at most %d", hl, maxFrameHead)}
	}
	head := make([]byte, hl)
	if _, err := io.ReadFull(r, head); err != nil {
		return frame{}, err
	}
	var f frame
	if err := json.Unmarshal(head, &f.head); err != nil {
		return frame{}, &frameError{fmt.Sprintf("the worker wrote a malformed frame: %v", err)}
	}
	lim := limitOf(f.head.Op)
	if int64(hl) > int64(lim.Head) || int64(pl) > int64(lim.Payload) {
		op := f.head.Op
		if len(op) > 32 {
			op = op[:32] + "…"
		}
		return frame{}, &frameError{fmt.Sprintf("the worker wrote a %q frame of %d+%d bytes; agentd takes at most %d+%d for it", op, hl, pl, lim.Head, lim.Payload)}
	}
	if pl > 0 {
		f.payload = make([]byte, pl)
		if _, err := io.ReadFull(r, f.payload); err != nil {
			return frame{}, err
		}
	}
	return f, nil
}

// send writes one frame to the worker. The model's code may never read
// it: when ctx ends, the write is cut short (the pipe is non-blocking, so
// a deadline interrupts it) and the caller stops the worker.
func (w *worker) send(ctx context.Context, head any, payload []byte) error {
	j, err := json.Marshal(head)
	if err != nil {
		return err
	}
	// A deadline left by an earlier call's end must not cut this one.
	if err := w.toW.SetWriteDeadline(time.Time{}); err != nil {
		return fmt.Errorf("write to the worker: %w", err)
	}
	stop := context.AfterFunc(ctx, func() { _ = w.toW.SetWriteDeadline(time.Now()) })
	defer stop()
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

// stop asks the keeper to kill the worker and every process it started,
// and waits for it and the reader. It returns how the worker ended. A
// keeper that does not end in time is killed.
func (w *worker) stop() error {
	close(w.quit)
	_ = w.cmd.Process.Signal(syscall.SIGTERM)
	w.toW.Close()
	t := time.AfterFunc(stopTimeout, func() { _ = w.cmd.Process.Kill() })
	err := w.cmd.Wait()
	t.Stop()
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
