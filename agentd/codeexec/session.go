package codeexec

import (
	"bytes"
	"context"
	"errors"
	"fmt"
	"image"
	"image/draw"
	"image/png"
	"os"
	"strings"
	"time"
	"unicode/utf8"

	"github.com/agentd-dev/agentd/actions"
	"github.com/agentd-dev/agentd/actions/wire"
	"github.com/agentd-dev/agentd/agentd/executor"
	"github.com/agentd-dev/agentd/capture/pngenc"
	"github.com/agentd-dev/agentd/scaling"
)

// Session is the code session of one controller session.
type Session struct {
	svc  *Service
	desk Desktop

	dir    string     // the private directory, made at the first Exec
	w      *worker    // nil when no namespace is alive
	raw    tailBuffer // what workers write to their stdout and stderr
	held   []heldInput
	scaler scaling.Scaler
	enc    pngenc.Encoder
	shot   []byte // the screenshot payload, reused

	// Per call.
	res        wire.ExecResult
	out        strings.Builder
	imageBytes int
}

// heldInput is a key or button the code holds down.
type heldInput struct {
	Held
	name string
}

// errKind tags an error for the worker: pyautogui raises its own exception
// class for each kind.
type errKind struct {
	kind string
	err  error
}

func (e *errKind) Error() string { return e.err.Error() }

// Exec runs code in the session's namespace, starting a fresh worker when
// none is alive. Past deadline the worker is killed and the result says the
// namespace is lost. When a person takes the desktop (an input refused with
// ErrTakenOver, or ctx ended with it as its cause) the worker is killed and
// the result says so (Stopped "taken_over"). When ctx ends otherwise (the
// client's cancel, the session's end) the worker is killed too, and Exec
// returns ctx's error with what ran so far. Every wait of the call, writes
// to a worker that does not read included, ends with ctx or the deadline.
// Keys and buttons the code left held are released when the call ends.
func (s *Session) Exec(ctx context.Context, code string, deadline time.Duration) (wire.ExecResult, error) {
	s.res, s.imageBytes = wire.ExecResult{}, 0
	s.out.Reset()
	start := time.Now()
	if s.w == nil {
		if err := s.start(ctx); err != nil {
			if ctx.Err() != nil {
				return wire.ExecResult{}, fmt.Errorf("%w: while the worker started", ctx.Err())
			}
			return wire.ExecResult{}, err
		}
		s.res.FreshNamespace = true
	}
	runCtx, cancel := context.WithTimeout(ctx, deadline)
	defer cancel()
	t := s.desk.Transform()
	err := s.w.send(runCtx, map[string]any{"op": "exec", "code": code,
		"view": map[string]int{"width": t.Image.W, "height": t.Image.H}}, nil)
	if err == nil {
		err = s.serve(runCtx)
	}
	switch {
	case err == nil:
	case errors.Is(err, ErrTakenOver) || errors.Is(context.Cause(ctx), ErrTakenOver):
		s.lose("taken_over", "stopped: a person took over the desktop, so agentd stopped the code; its namespace is lost, "+
			"the next call starts a fresh one once the desktop is handed back. Look at the screen before acting again")
		err = nil
	case ctx.Err() == nil && errors.Is(err, context.DeadlineExceeded):
		s.lose("deadline", fmt.Sprintf("stopped: the code ran past its deadline of %s; its namespace is lost, the next call starts a fresh one", deadline))
		err = nil
	case ctx.Err() != nil:
		s.lose("cancelled", "")
	}
	s.releaseHeld()
	if raw, dropped := s.raw.Take(); len(raw) > 0 {
		s.note("written by the worker outside print:")
		s.text(string(raw))
		if dropped > 0 {
			s.note(fmt.Sprintf("%d more bytes of it dropped", dropped))
		}
	}
	s.res.Output = s.out.String()
	s.res.DurationUS = time.Since(start).Microseconds()
	if err != nil && ctx.Err() != nil {
		return s.res, fmt.Errorf("%w: the worker was stopped, its namespace is lost", ctx.Err())
	}
	return s.res, err
}

// serve answers the worker until its code is done. An error ends the call:
// the context's, ErrTakenOver, or a worker that could not be talked to
// (then the namespace is lost and the result says so).
func (s *Session) serve(ctx context.Context) error {
	for {
		select {
		case <-ctx.Done():
			return ctx.Err()
		case f, ok := <-s.w.frames:
			if !ok {
				s.workerGone()
				return nil
			}
			switch f.head.Op {
			case "done":
				s.res.Traceback = f.head.Traceback
				return nil
			case "out":
				s.text(f.head.Text)
			case "image":
				s.image(f)
			default:
				if ctx.Err() != nil {
					return ctx.Err()
				}
				rep, payload, err := s.request(ctx, f)
				if err != nil {
					return err
				}
				if ctx.Err() != nil {
					return ctx.Err()
				}
				if err := s.w.send(ctx, rep, payload); err != nil {
					if ctx.Err() != nil {
						return ctx.Err()
					}
					s.workerGone()
					return nil
				}
			}
		}
	}
}

// request performs one request of pyautogui and returns its answer. An
// input refused because a person holds the desktop is not answered: it is
// ErrTakenOver, which ends the call.
func (s *Session) request(ctx context.Context, f frame) (map[string]any, []byte, error) {
	var payload []byte
	rep := map[string]any{}
	var err error
	switch f.head.Op {
	case "act":
		err = s.act(ctx, f.head)
	case "wheel":
		err = s.wheel(ctx, f.head)
	case "hold":
		err = s.hold(ctx, f.head)
	case "position":
		var x, y int
		x, y, err = s.position(ctx)
		rep["x"], rep["y"] = x, y
	case "screenshot":
		var w, h int
		w, h, payload, err = s.screenshot(ctx)
		rep["width"], rep["height"] = w, h
	default:
		err = fmt.Errorf("unknown request %q", f.head.Op)
	}
	if errors.Is(err, ErrTakenOver) {
		return nil, nil, err
	}
	if err != nil {
		rep = map[string]any{"error": err.Error()}
		var ek *errKind
		if errors.As(err, &ek) {
			rep["kind"] = ek.kind
		}
		return rep, nil, nil
	}
	return rep, payload, nil
}

func (s *Session) act(ctx context.Context, m message) error {
	a, err := actions.Decode(m.Action)
	if err != nil {
		return &errKind{"value", err}
	}
	if a.Type == actions.Scroll {
		return &errKind{"value", errors.New("scroll goes through pyautogui.scroll")}
	}
	if m.Failsafe {
		if err := s.failsafe(ctx); err != nil {
			return err
		}
	}
	t := s.desk.Transform()
	pts := a.Points()
	for i, p := range pts {
		x, y, err := t.ToScreen(p.X, p.Y)
		if err != nil {
			return &errKind{"bounds", fmt.Errorf("(%d, %d) is outside the %d×%d screen", p.X, p.Y, t.Image.W, t.Image.H)}
		}
		pts[i] = actions.Point{X: x, Y: y}
	}
	if len(pts) > 0 {
		a = a.WithPoints(pts)
	}
	return s.do(ctx, a)
}

// wheel scrolls whole wheel steps at a point: the executor scrolls pixels
// of the screen, so steps become exactly that many of its steps.
func (s *Session) wheel(ctx context.Context, m message) error {
	if m.X == nil || m.Y == nil {
		return &errKind{"value", errors.New("wheel needs x and y")}
	}
	if m.Failsafe {
		if err := s.failsafe(ctx); err != nil {
			return err
		}
	}
	t := s.desk.Transform()
	x, y, err := t.ToScreen(*m.X, *m.Y)
	if err != nil {
		return &errKind{"bounds", fmt.Errorf("(%d, %d) is outside the %d×%d screen", *m.X, *m.Y, t.Image.W, t.Image.H)}
	}
	if abs(m.StepsX) > executor.MaxWheelSteps || abs(m.StepsY) > executor.MaxWheelSteps {
		return &errKind{"value", fmt.Errorf("at most %d wheel steps per scroll", executor.MaxWheelSteps)}
	}
	per := s.svc.opts.ScrollPixelsPerStep
	a := actions.Action{Type: actions.Scroll, X: x, Y: y, ScrollX: m.StepsX * per, ScrollY: m.StepsY * per}
	return s.do(ctx, a)
}

// do performs a through the Desktop's gate.
func (s *Session) do(ctx context.Context, a actions.Action) error {
	if _, err := s.desk.Do(ctx, a); err != nil {
		if errors.Is(err, ErrTakenOver) {
			return err
		}
		return &errKind{"failed", err}
	}
	return nil
}

func (s *Session) hold(ctx context.Context, m message) error {
	var h heldInput
	switch {
	case m.Key != "" && m.Button == "":
		k, err := actions.ParseKey(m.Key)
		if err != nil {
			return &errKind{"value", err}
		}
		h = heldInput{Held{Key: k}, "key " + m.Key}
	case m.Button != "" && m.Key == "":
		b, err := actions.ParseButton(actions.Button(m.Button))
		if err != nil {
			return &errKind{"value", err}
		}
		h = heldInput{Held{Button: b}, "button " + string(b)}
	default:
		return &errKind{"value", errors.New("hold needs a key or a button")}
	}
	if !m.Down {
		if err := s.desk.Press(h.Held, false); err != nil {
			if errors.Is(err, ErrTakenOver) {
				return err
			}
			return &errKind{"failed", fmt.Errorf("release %s: %w", h.name, err)}
		}
		for i := len(s.held) - 1; i >= 0; i-- {
			if s.held[i].Held == h.Held {
				s.held = append(s.held[:i], s.held[i+1:]...)
				break
			}
		}
		return nil
	}
	if m.Failsafe {
		if err := s.failsafe(ctx); err != nil {
			return err
		}
	}
	// Tracked before the press: a press that fails may still have reached
	// the display, so it is released too.
	s.held = append(s.held, h)
	if err := s.desk.Press(h.Held, true); err != nil {
		if errors.Is(err, ErrTakenOver) {
			s.held = s.held[:len(s.held)-1] // refused: nothing was pressed
			return err
		}
		return &errKind{"failed", fmt.Errorf("press %s: %w", h.name, err)}
	}
	return nil
}

// releaseHeld releases what the code still holds, last pressed first, and
// says so in the result.
func (s *Session) releaseHeld() {
	for i := len(s.held) - 1; i >= 0; i-- {
		h := s.held[i]
		if err := s.desk.Release(h.Held); err != nil {
			s.svc.opts.Logf("code: release %s: %v", h.name, err)
		}
		s.res.Released = append(s.res.Released, h.name)
	}
	s.held = s.held[:0]
}

// position is the pointer in the view's image space.
func (s *Session) position(ctx context.Context) (int, int, error) {
	sx, sy, err := s.svc.opts.Pointer(ctx)
	if err != nil {
		return 0, 0, &errKind{"failed", fmt.Errorf("pointer position: %w", err)}
	}
	x, y, err := s.desk.Transform().ToImage(sx, sy)
	if err != nil {
		return 0, 0, &errKind{"bounds", errors.New("the pointer is outside the part of the screen the view shows")}
	}
	return x, y, nil
}

// failsafe is pyautogui's fail-safe: the pointer in a corner of the screen
// stops the code.
func (s *Session) failsafe(ctx context.Context) error {
	x, y, err := s.position(ctx)
	var ek *errKind
	if errors.As(err, &ek) && ek.kind == "bounds" {
		return nil
	}
	if err != nil {
		return err
	}
	img := s.desk.Transform().Image
	if (x == 0 || x == img.W-1) && (y == 0 || y == img.H-1) {
		return &errKind{"failsafe", fmt.Errorf("PyAutoGUI fail-safe triggered from the pointer in the corner (%d, %d) of the screen; "+
			"move it away (or set pyautogui.FAILSAFE = False, not recommended)", x, y)}
	}
	return nil
}

// screenshot is the screen as the view shows it, as RGBA rows.
func (s *Session) screenshot(ctx context.Context) (int, int, []byte, error) {
	t := s.desk.Transform()
	err := s.desk.Capture(ctx, func(src *image.RGBA) error {
		img, err := s.scaler.Scale(src, t)
		if err != nil {
			return err
		}
		w, h := t.Image.W, t.Image.H
		s.shot = grow(s.shot, 4*w*h)
		for y := range h {
			off := img.PixOffset(img.Rect.Min.X, img.Rect.Min.Y+y)
			copy(s.shot[4*w*y:4*w*(y+1)], img.Pix[off:off+4*w])
		}
		return nil
	})
	if err != nil {
		return 0, 0, nil, &errKind{"failed", fmt.Errorf("screenshot: %w", err)}
	}
	return t.Image.W, t.Image.H, s.shot, nil
}

func grow(b []byte, n int) []byte {
	if cap(b) < n {
		return make([]byte, n)
	}
	return b[:n]
}

// image adds one display() to the result: scaled down to fit the view if
// larger, encoded as PNG, within the caps.
func (s *Session) image(f frame) {
	n := len(s.res.Images) + s.res.ImagesDropped + 1
	if len(s.res.Images) >= s.svc.opts.MaxImages {
		s.res.ImagesDropped++
		s.note(fmt.Sprintf("image %d dropped: at most %d images per call", n, s.svc.opts.MaxImages))
		return
	}
	img, err := decodeImage(f)
	if err != nil {
		s.res.ImagesDropped++
		s.note(fmt.Sprintf("image %d dropped: %v", n, err))
		return
	}
	b := img.Bounds()
	view := s.desk.Transform().Image
	meta := wire.ExecImage{Width: b.Dx(), Height: b.Dy()}
	if b.Dx() > view.W || b.Dy() > view.H {
		t, err := scaling.New(scaling.Size{W: b.Dx(), H: b.Dy()}, nil, view.W, view.H, true)
		var scaled *image.RGBA
		if err == nil {
			scaled, err = s.scaler.Scale(toRGBA(img), t)
		}
		if err != nil {
			s.res.ImagesDropped++
			s.note(fmt.Sprintf("image %d dropped: scaling it: %v", n, err))
			return
		}
		meta.ScaledFrom = &scaling.Size{W: b.Dx(), H: b.Dy()}
		meta.Width, meta.Height = t.Image.W, t.Image.H
		img = scaled
	}
	var buf bytes.Buffer
	if err := s.enc.Encode(&buf, img); err != nil {
		s.res.ImagesDropped++
		s.note(fmt.Sprintf("image %d dropped: %v", n, err))
		return
	}
	if s.imageBytes+buf.Len() > s.svc.opts.MaxImageBytes {
		s.res.ImagesDropped++
		s.note(fmt.Sprintf("image %d dropped: the images of one call are capped at %d bytes", n, s.svc.opts.MaxImageBytes))
		return
	}
	s.imageBytes += buf.Len()
	meta.Bytes, meta.PNG = buf.Len(), buf.Bytes()
	s.res.Images = append(s.res.Images, meta)
	if meta.ScaledFrom != nil {
		s.note(fmt.Sprintf("image %d: %d×%d, scaled from %d×%d to fit the view", n, meta.Width, meta.Height, meta.ScaledFrom.W, meta.ScaledFrom.H))
	} else {
		s.note(fmt.Sprintf("image %d: %d×%d", n, meta.Width, meta.Height))
	}
}

func decodeImage(f frame) (image.Image, error) {
	switch f.head.Format {
	case "rgba":
		w, h := f.head.Width, f.head.Height
		if w <= 0 || h <= 0 || w > scaling.MaxSide || h > scaling.MaxSide || len(f.payload) != 4*w*h {
			return nil, fmt.Errorf("malformed %d×%d image", w, h)
		}
		return &image.NRGBA{Pix: f.payload, Stride: 4 * w, Rect: image.Rect(0, 0, w, h)}, nil
	case "png":
		cfg, err := png.DecodeConfig(bytes.NewReader(f.payload))
		if err != nil {
			return nil, fmt.Errorf("not a PNG: %w", err)
		}
		if cfg.Width > scaling.MaxSide || cfg.Height > scaling.MaxSide || int64(cfg.Width)*int64(cfg.Height) > MaxDisplayPixels {
			return nil, fmt.Errorf("a %d×%d PNG is too large", cfg.Width, cfg.Height)
		}
		img, err := png.Decode(bytes.NewReader(f.payload))
		if err != nil {
			return nil, fmt.Errorf("not a PNG: %w", err)
		}
		return img, nil
	}
	return nil, fmt.Errorf("unknown image format %q", f.head.Format)
}

// toRGBA returns img as an *image.RGBA at the origin (the scaler's input;
// it ignores alpha).
func toRGBA(img image.Image) *image.RGBA {
	b := img.Bounds()
	if n, ok := img.(*image.NRGBA); ok && b.Min == (image.Point{}) {
		return &image.RGBA{Pix: n.Pix, Stride: n.Stride, Rect: n.Rect}
	}
	dst := image.NewRGBA(image.Rect(0, 0, b.Dx(), b.Dy()))
	draw.Draw(dst, dst.Rect, img, b.Min, draw.Src)
	return dst
}

// text appends printed text within the cap; what does not fit is counted.
func (s *Session) text(t string) {
	if s.res.OutputTruncated {
		return
	}
	room := s.svc.opts.MaxOutputBytes - s.out.Len()
	if len(t) <= room {
		s.out.WriteString(t)
		return
	}
	cut := room
	for cut > 0 && !utf8.RuneStart(t[cut]) {
		cut--
	}
	s.out.WriteString(t[:cut])
	s.res.OutputTruncated = true
	s.out.WriteString(fmt.Sprintf("\n[output truncated: at most %d bytes per call]\n", s.svc.opts.MaxOutputBytes))
}

// note adds agentd's own remark to the output, marked as such; notes are
// never dropped by the cap.
func (s *Session) note(msg string) {
	if s.out.Len() > 0 && !strings.HasSuffix(s.out.String(), "\n") {
		s.out.WriteByte('\n')
	}
	s.out.WriteString("[" + msg + "]\n")
}

// start makes the session's directory (once) and a fresh worker, and
// waits until it is ready: its start does not count against the deadline.
func (s *Session) start(ctx context.Context) error {
	if s.dir == "" {
		dir, err := s.svc.writeLib()
		if err != nil {
			return err
		}
		s.dir = dir
	}
	w, err := startWorker(&s.svc.opts, s.dir, &s.raw)
	if err != nil {
		return err
	}
	if err := w.ready(ctx, &s.raw, s.svc.opts.Logf); err != nil {
		s.raw.Take() // told in the error
		return fmt.Errorf("start the Python worker: %w", err)
	}
	s.w = w
	return nil
}

// workerGone handles a worker that ended during a call on its own.
func (s *Session) workerGone() {
	w := s.w
	s.w = nil
	err := w.stop()
	s.res.NamespaceLost, s.res.Stopped = true, "exited"
	var fe *frameError
	if errors.As(w.readErr, &fe) {
		s.note("stopped: " + fe.msg + "; its namespace is lost, the next call starts a fresh one")
		return
	}
	s.note(exitReason(err, &s.raw) + "; its namespace is lost, the next call starts a fresh one")
}

// lose kills the worker: its namespace is gone.
func (s *Session) lose(why, msg string) {
	if s.w != nil {
		_ = s.w.stop()
		s.w = nil
	}
	s.res.NamespaceLost, s.res.Stopped = true, why
	if msg != "" {
		s.note(msg)
	}
}

// Close kills the worker, releases what it held and removes the session's
// directory.
func (s *Session) Close() error {
	if s.w != nil {
		_ = s.w.stop()
		s.w = nil
	}
	s.releaseHeld()
	if s.dir == "" {
		return nil
	}
	err := os.RemoveAll(s.dir)
	s.dir = ""
	return err
}

func abs(v int) int {
	if v < 0 {
		return -v
	}
	return v
}
