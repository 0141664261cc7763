package backend

import (
	"context"
	"os"
	"path/filepath"
	"sync"
	"testing"
)

// poolFake is a backend whose guests are records alone: Open finds one
// while its directory exists, healthy unless its name is in sick.
type poolFake struct{ sick map[string]bool }

func (poolFake) Name() string                           { return "poolfake" }
func (poolFake) Check(Spec) error                       { return nil }
func (poolFake) List(context.Context) ([]string, error) { return NamedOn("poolfake") }
func (poolFake) Up(context.Context, Spec) (Instance, error) {
	panic("the pool test starts no guest")
}

func (f poolFake) Open(_ context.Context, name string) (Instance, error) {
	d, err := Record(name)
	if err != nil {
		return nil, err
	}
	return fakeInst{d: d, sick: f.sick[name]}, nil
}

type fakeInst struct {
	d    Description
	sick bool
}

func (i fakeInst) Describe() Description { return i.d }
func (i fakeInst) Status(context.Context) Status {
	if i.sick {
		return Status{Running: true, Health: "unreachable"}
	}
	return Status{Running: true, Health: "ok"}
}
func (fakeInst) Down(context.Context) error { return nil }
func (fakeInst) Close() error               { return nil }

var fake = poolFake{sick: map[string]bool{}}

func init() { Register(fake) }

// pooled makes a pooled guest record offered for key.
func pooled(t *testing.T, key PoolKey) string {
	t.Helper()
	name := PoolName()
	dir, err := Dir(name)
	if err != nil {
		t.Fatal(err)
	}
	if err := os.Mkdir(dir, 0o700); err != nil {
		t.Fatal(err)
	}
	if err := writeRecord(dir, Description{Name: name, Backend: "poolfake", Addr: "unix:/nowhere"}); err != nil {
		t.Fatal(err)
	}
	if err := MarkPooled(name, key); err != nil {
		t.Fatal(err)
	}
	return name
}

// Many runs claiming at once from a pool of fewer guests: every guest goes
// to exactly one run, the runs left over get none.
func TestClaimGivesEachGuestToOneRun(t *testing.T) {
	t.Setenv("XDG_RUNTIME_DIR", t.TempDir())
	key := PoolKey{Backend: "poolfake", Apps: "desktop"}
	const guests, runs = 5, 16
	want := map[string]bool{}
	for range guests {
		want[pooled(t, key)] = true
	}
	other := pooled(t, PoolKey{Backend: "poolfake", Apps: "desktop", Network: true})

	var mu sync.Mutex
	got := map[string]int{}
	none := 0
	var wg sync.WaitGroup
	for range runs {
		wg.Add(1)
		go func() {
			defer wg.Done()
			inst, name, err := Claim(context.Background(), key)
			if err != nil {
				t.Error(err)
				return
			}
			mu.Lock()
			defer mu.Unlock()
			if inst == nil {
				none++
				return
			}
			got[name]++
		}()
	}
	wg.Wait()
	for name, n := range got {
		if n != 1 || !want[name] {
			t.Errorf("guest %s given to %d runs (a guest of the pool: %v)", name, n, want[name])
		}
	}
	if len(got) != guests || none != runs-guests {
		t.Errorf("%d guests given out, %d runs got none; want %d and %d", len(got), none, guests, runs-guests)
	}
	if left, err := Offered(key); err != nil || len(left) != 0 {
		t.Errorf("offered after every guest was claimed: %v, %v", left, err)
	}
	if left, err := Offered(PoolKey{Backend: "poolfake", Apps: "desktop", Network: true}); err != nil || len(left) != 1 || left[0] != other {
		t.Errorf("the guest with a network: offered %v, %v; want [%s] (no run asked for it)", left, err, other)
	}
}

// A pooled guest that is no longer healthy is taken down, not given out,
// and a healthy one is.
func TestClaimSkipsAndRemovesSickGuests(t *testing.T) {
	t.Setenv("XDG_RUNTIME_DIR", t.TempDir())
	key := PoolKey{Backend: "poolfake", Apps: "none"}
	a := pooled(t, key)
	fake.sick[a] = true
	t.Cleanup(func() { delete(fake.sick, a) })
	if inst, name, err := Claim(context.Background(), key); err != nil || inst != nil {
		t.Fatalf("Claim = %q, %v; want none: the only guest is sick", name, err)
	}
	root, _ := Root()
	if _, err := os.Stat(filepath.Join(root, a)); !os.IsNotExist(err) {
		t.Errorf("the sick guest %s is still there: %v", a, err)
	}
	b := pooled(t, key)
	if _, name, err := Claim(context.Background(), key); err != nil || name != b {
		t.Errorf("Claim = %q, %v; want the healthy %s", name, err, b)
	}
}

// Every option that changes what a guest can do is part of its pool key, so a
// run never gets a guest without the code service or the browser it needs.
func TestKeyOfTellsEveryOptionApart(t *testing.T) {
	base := Spec{}
	specs := map[string]Spec{"plain": base, "network": {Network: true}, "code": {Code: true}, "browser": {Browser: true}, "size": {Width: 800, Height: 600}}
	seen := map[PoolKey]string{}
	for name, spec := range specs {
		k := KeyOf("docker", spec)
		if other, dup := seen[k]; dup {
			t.Errorf("specs %q and %q have the same pool key %+v", name, other, k)
		}
		seen[k] = name
	}
}
