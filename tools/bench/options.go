package bench

import (
	"errors"
	"fmt"
	"io"
	"strconv"
	"strings"
	"time"
)

// Limits on the options.
const (
	MinDuration = 100 * time.Millisecond
	MaxDuration = 10 * time.Minute
	// MinSide keeps room for the desktop's windows and the click targets;
	// MaxSide is the local guest's own limit.
	MinSide = 640
	MaxSide = 8192
)

// DefaultDuration is the time spent on each figure.
const DefaultDuration = 2 * time.Second

// Size is a screen size in pixels.
type Size struct{ W, H int }

func (s Size) String() string { return fmt.Sprintf("%dx%d", s.W, s.H) }

// DefaultSizes are the screens measured when none are given.
var DefaultSizes = []Size{{1440, 900}, {1920, 1080}}

// Options configure Run.
type Options struct {
	// Sizes are the screen sizes measured, each on a fresh guest. Input,
	// typing and the peers' input are measured on the first only: they do
	// not depend on the screen size.
	Sizes []Size
	// Duration is the time spent on each figure (each contender of a
	// comparison gets about this much).
	Duration time.Duration
	// AgentdPath is the agentd binary; empty: next to this program, else
	// on $PATH.
	AgentdPath string
	// Progress, if set, receives one line as each part starts.
	Progress io.Writer
}

// ParseSizes parses a comma-separated list such as "1440x900,1920x1080".
func ParseSizes(s string) ([]Size, error) {
	if strings.TrimSpace(s) == "" {
		return nil, errors.New("--size: no size given (want e.g. 1440x900,1920x1080)")
	}
	var sizes []Size
	seen := map[Size]bool{}
	for _, f := range strings.Split(s, ",") {
		sz, err := parseSize(strings.TrimSpace(f))
		if err != nil {
			return nil, err
		}
		if seen[sz] {
			return nil, fmt.Errorf("--size: %v is given twice", sz)
		}
		seen[sz] = true
		sizes = append(sizes, sz)
	}
	return sizes, nil
}

func parseSize(f string) (Size, error) {
	ws, hs, ok := strings.Cut(strings.ToLower(f), "x")
	w, werr := strconv.Atoi(ws)
	h, herr := strconv.Atoi(hs)
	if !ok || werr != nil || herr != nil {
		return Size{}, fmt.Errorf("--size: bad size %q: want WIDTHxHEIGHT, e.g. 1440x900", f)
	}
	if w < MinSide || h < MinSide*3/4 || w > MaxSide || h > MaxSide {
		return Size{}, fmt.Errorf("--size: %dx%d is out of range: %dx%d to %dx%d", w, h, MinSide, MinSide*3/4, MaxSide, MaxSide)
	}
	return Size{w, h}, nil
}

// Validate checks the options before anything starts.
func (o Options) Validate() error {
	if len(o.Sizes) == 0 {
		return errors.New("--size: no size given")
	}
	for _, s := range o.Sizes {
		if _, err := parseSize(s.String()); err != nil {
			return err
		}
	}
	if o.Duration < MinDuration || o.Duration > MaxDuration {
		return fmt.Errorf("--duration %v: must be between %v and %v", o.Duration, MinDuration, MaxDuration)
	}
	return nil
}
