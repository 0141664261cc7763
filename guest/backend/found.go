package backend

import (
	"context"
	"os"
	"slices"
)

// A backend's List and Open may find named guests that this machine has no
// record of: a kubernetes guest is found by its labels on the cluster,
// whichever machine started it. StatusOn and DownOn go through the backend
// for those, and through the records (StatusOf, Down) for the others.

// StatusOn describes every named guest of b: those b lists (on a cluster,
// started anywhere) and those this machine has a record of on b (a guest
// that vanished is listed by its record alone), sorted by name.
func StatusOn(ctx context.Context, b Backend) ([]NamedStatus, error) {
	names, err := b.List(ctx)
	if err != nil {
		return nil, err
	}
	recorded, err := NamedOn(b.Name())
	if err != nil {
		return nil, err
	}
	names = append(names, recorded...)
	slices.Sort(names)
	var out []NamedStatus
	for _, n := range slices.Compact(names) {
		if slices.Contains(recorded, n) {
			out = append(out, StatusOf(ctx, n))
			continue
		}
		s := NamedStatus{Description: Description{Name: n, Backend: b.Name()}, Status: Status{Health: "-"}, Elsewhere: true}
		inst, err := b.Open(ctx, n)
		if err != nil {
			s.Health = err.Error()
		} else {
			s.Description, s.Status = inst.Describe(), inst.Status(ctx)
			_ = inst.Close()
		}
		out = append(out, s)
	}
	return out, nil
}

// DownOn takes down the named guest of b: through its record when this
// machine has one (Down), else as b finds it (b.Open), for a guest another
// machine started. wasRunning is as Down's.
func DownOn(ctx context.Context, b Backend, name string) (wasRunning bool, err error) {
	dir, err := Dir(name)
	if err != nil {
		return false, err
	}
	if _, err := os.Stat(dir); err == nil {
		return Down(ctx, name, false)
	}
	inst, err := b.Open(ctx, name)
	if err != nil {
		return false, err
	}
	defer inst.Close()
	running := inst.Status(ctx).Running
	return running, inst.Down(ctx)
}
