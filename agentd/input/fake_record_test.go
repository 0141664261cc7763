package input

import (
	"context"
	"errors"
	"reflect"
	"testing"

	"github.com/agentd-dev/agentd/actions"
)

func TestFakeRecordsAndFails(t *testing.T) {
	in := NewFake(3, 4)
	in.FailAt(2, nil)
	if w, h, err := in.ScreenSize(); w != 3 || h != 4 || err != nil {
		t.Errorf("ScreenSize = %d, %d, %v", w, h, err)
	}
	if err := in.MoveTo(1, 2); !errors.Is(err, ErrFakeFailure) {
		t.Errorf("second call err = %v, want ErrFakeFailure", err)
	}
	boom := errors.New("boom")
	in.FailAt(1, boom)
	if err := in.KeyDown(actions.Key{Keysym: "a"}); !errors.Is(err, boom) {
		t.Errorf("err = %v, want boom", err)
	}
	_ = in.ButtonDown(actions.Back)
	_ = in.Wheel(-1, 2)
	_ = in.PrepareText(context.Background(), "x")
	_ = in.TypeRune('x')
	if got, want := in.Down(), []string{"key:a", "button:back"}; !reflect.DeepEqual(got, want) {
		t.Errorf("Down = %q, want %q", got, want)
	}
	_ = in.Close()
	want := []string{"ScreenSize", "MoveTo(1,2)", "KeyDown(a)", "ButtonDown(back)", "Wheel(-1,2)", `PrepareText("x")`, "TypeRune('x')", "Close"}
	if got := in.Strings(); !reflect.DeepEqual(got, want) {
		t.Errorf("calls:\n got %q\nwant %q", got, want)
	}
	if got := in.Down(); len(got) != 0 {
		t.Errorf("Down after Close = %q, want nothing (Close releases)", got)
	}
}
