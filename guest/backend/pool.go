package backend

import (
	"context"
	"errors"
	"fmt"
	"io"
	"io/fs"
	"os"
	"path/filepath"
	"strings"

	"github.com/agentd-dev/agentd/internal/randhex"
	"github.com/agentd-dev/agentd/internal/statedir"
)

// A pool keeps guests started before a run asks for one ('agentctl guest
// pool'). A pooled guest is an ordinary named guest, PoolPrefix + random
// hex, whose directory also holds pool.json (its PoolKey), written once the
// guest is up and healthy. A run claims one by creating the file "claimed"
// in its directory with O_EXCL: the kernel lets exactly one creator
// succeed, so two runs, in one process or two, never get the same guest.
// A claimed guest is the run's: it is never given out again, and the run
// takes it down as it would a fresh one.

// PoolPrefix begins every pooled guest's name.
const PoolPrefix = "pool-"

const (
	poolFile  = "pool.json"
	claimFile = "claimed"
)

// PoolKey is what a run needs a pooled guest to be; only a guest with the
// very same key is given to it.
type PoolKey struct {
	Backend string `json:"backend"`
	Apps    string `json:"apps"`
	Width   int    `json:"width"`
	Height  int    `json:"height"`
	Network bool   `json:"network"`
	Code    bool   `json:"code"`
	Browser bool   `json:"browser"`
}

// KeyOf is the pool key of spec on the backend named backend. A spec
// without a size has its desktop's, so a pool started with --apps exercise
// serves the exercise, which names its desktop's size.
func KeyOf(backend string, spec Spec) PoolKey {
	w, h := spec.Width, spec.Height
	if w == 0 && spec.Desktop != nil {
		w, h = spec.Desktop.Size()
	}
	return PoolKey{Backend: backend, Apps: spec.AppsName(), Width: w, Height: h, Network: spec.Network, Code: spec.Code, Browser: spec.Browser}
}

// PoolName is a fresh name for a pooled guest.
func PoolName() string { return PoolPrefix + randhex.String(4) }

// MarkPooled offers the named guest, up and healthy, to runs asking for key.
func MarkPooled(name string, key PoolKey) error {
	dir, err := Dir(name)
	if err != nil {
		return err
	}
	if err := statedir.WriteJSON(filepath.Join(dir, poolFile), key); err != nil {
		return fmt.Errorf("pool guest %q: %w", name, err)
	}
	return nil
}

// Offered lists the pooled guests offered for key and not claimed yet.
func Offered(key PoolKey) ([]string, error) {
	names, err := Named()
	if err != nil {
		return nil, err
	}
	var out []string
	for _, n := range names {
		if !strings.HasPrefix(n, PoolPrefix) {
			continue
		}
		dir, err := Dir(n)
		if err != nil {
			continue
		}
		var k PoolKey
		if statedir.ReadJSON(filepath.Join(dir, poolFile), &k) != nil || k != key {
			continue // still starting, not a pool's, or not for key
		}
		if _, err := os.Stat(filepath.Join(dir, claimFile)); errors.Is(err, fs.ErrNotExist) {
			out = append(out, n)
		}
	}
	return out, nil
}

// TryClaim makes the named pooled guest the caller's; false when another
// caller claimed it first.
func TryClaim(name string) (bool, error) {
	dir, err := Dir(name)
	if err != nil {
		return false, err
	}
	f, err := os.OpenFile(filepath.Join(dir, claimFile), os.O_WRONLY|os.O_CREATE|os.O_EXCL, 0o600)
	switch {
	case errors.Is(err, fs.ErrExist):
		return false, nil
	case errors.Is(err, fs.ErrNotExist):
		return false, nil // taken down meanwhile
	case err != nil:
		return false, fmt.Errorf("claim pooled guest %q: %w", name, err)
	}
	return true, f.Close()
}

// Claim takes a healthy pooled guest offered for key, or returns a nil
// Instance when there is none. A claimed guest that turns out not to be
// healthy is taken down and the next one tried. The caller owns the guest:
// Down(ctx, name, false) when done.
func Claim(ctx context.Context, key PoolKey) (inst Instance, name string, err error) {
	names, err := Offered(key)
	if err != nil {
		return nil, "", err
	}
	for _, n := range names {
		ok, err := TryClaim(n)
		if err != nil {
			return nil, "", err
		}
		if !ok {
			continue
		}
		inst, err := Open(ctx, n)
		if err == nil {
			if st := inst.Status(ctx); st.Running && st.Health == "ok" {
				return inst, n, nil
			}
			inst.Close()
		}
		if _, err := Down(ctx, n, false); err != nil {
			return nil, "", err
		}
	}
	return nil, "", nil
}

// clearPool removes a pooled guest's pool files once it is down.
func clearPool(dir string) {
	os.Remove(filepath.Join(dir, poolFile))
	os.Remove(filepath.Join(dir, claimFile))
}

// SharedPool is a backend whose pool lives with its guests, not in this
// machine's directories (kubernetes: labels on the API server), so that
// keepers and claimers on any machine share one pool.
type SharedPool interface {
	// KeepPool keeps size unclaimed guests of spec's kind ready until ctx
	// ends, then takes down the unclaimed ones it started.
	KeepPool(ctx context.Context, spec Spec, size int, out io.Writer) error
	// Claim takes a ready pooled guest of key's kind for the caller, who
	// owns it (its Down when done); nil when there is none.
	Claim(ctx context.Context, key PoolKey) (Instance, error)
	// Offer starts one pooled guest of spec's kind, unclaimed, and returns
	// once a claimer can take it (the bench's pooled start, without a
	// keeper starting replacements beside the measurement).
	Offer(ctx context.Context, spec Spec) error
}
