package xvfbtest

import (
	"os"
	"strings"
	"testing"
)

func TestStartTwoDisplays(t *testing.T) {
	a := Start(t, 320, 200)
	b := Start(t, 320, 200)
	if a.Display == b.Display {
		t.Fatalf("two servers share display %s", a.Display)
	}
	if !strings.HasPrefix(a.Display, ":") {
		t.Fatalf("display %q", a.Display)
	}
	sock := "/tmp/.X11-unix/X" + strings.TrimPrefix(a.Display, ":")
	if _, err := os.Stat(sock); err != nil {
		t.Fatalf("socket of a running server: %v", err)
	}
	a.Stop()
	if _, err := os.Stat(sock); !os.IsNotExist(err) {
		t.Fatalf("socket left after Stop: %v", err)
	}
}
