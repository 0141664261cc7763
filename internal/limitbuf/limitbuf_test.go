package limitbuf

import (
	"io"
	"strings"
	"testing"
)

func TestBufferStopsAtMax(t *testing.T) {
	b := &Buffer{Max: 10}
	if _, err := io.Copy(b, strings.NewReader("0123456789")); err != nil || b.String() != "0123456789" {
		t.Fatalf("exactly Max: %v %q", err, b.String())
	}
	if _, err := b.Write([]byte("x")); err == nil || !strings.Contains(err.Error(), "larger than 10 bytes") {
		t.Fatalf("past Max: %v", err)
	}
	if b.Len() != 10 {
		t.Fatalf("a refused write changed the buffer: %q", b.String())
	}
}
