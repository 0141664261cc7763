package backend

import (
	"context"
	"errors"
	"io/fs"
	"path/filepath"
	"testing"
)

// A guest whose token file is gone is not dialled: the error is the
// token's, wrapping fs.ErrNotExist (a dial of the closed port would be
// refused instead).
func TestDialWithoutToken(t *testing.T) {
	token := filepath.Join(t.TempDir(), "token")
	inst := fakeInst{d: Description{Addr: "127.0.0.1:1", TokenFile: token}}
	_, err := Dial(context.Background(), inst)
	if !errors.Is(err, fs.ErrNotExist) {
		t.Fatalf("Dial = %v, want an error wrapping fs.ErrNotExist", err)
	}
}
