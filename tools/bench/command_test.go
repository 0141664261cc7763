package bench

import (
	"context"
	"io"
	"strings"
	"testing"
	"time"
)

func TestParseFlags(t *testing.T) {
	for _, tc := range []struct {
		name    string
		args    []string
		wantErr string
	}{
		{name: "defaults", args: nil},
		{name: "all flags", args: []string{"--json", "--duration", "500ms", "--size", "1440x900"}},
		{name: "bad size", args: []string{"--size", "1440by900"}, wantErr: `--size: bad size "1440by900": want WIDTHxHEIGHT`},
		{name: "size too small", args: []string{"--size", "100x100"}, wantErr: "--size: 100x100 is out of range"},
		{name: "empty size", args: []string{"--size", ""}, wantErr: "--size: no size given"},
		{name: "bad duration", args: []string{"--duration", "fast"}, wantErr: `invalid value "fast" for flag -duration`},
		{name: "zero duration", args: []string{"--duration", "0s"}, wantErr: "--duration 0s: must be between 100ms and 10m0s"},
		{name: "negative duration", args: []string{"--duration", "-1s"}, wantErr: "--duration -1s: must be between"},
		{name: "stray argument", args: []string{"now"}, wantErr: "unexpected arguments: [now]"},
		{name: "negative guest rounds", args: []string{"--guest-rounds", "-1"}, wantErr: "--guest-rounds -1: want 0 or more"},
	} {
		t.Run(tc.name, func(t *testing.T) {
			opts, _, err := ParseFlags(tc.args)
			if tc.wantErr == "" {
				if err != nil {
					t.Fatalf("error %v", err)
				}
				if len(opts.Sizes) == 0 || opts.Duration < 100*time.Millisecond {
					t.Fatalf("options %+v", opts)
				}
				return
			}
			if err == nil || !strings.Contains(err.Error(), tc.wantErr) {
				t.Fatalf("error %v, want it to contain %q", err, tc.wantErr)
			}
		})
	}
}

// Bad --guest-start flags are refused before any guest starts.
func TestGuestStartCommandRefusesBadFlags(t *testing.T) {
	for _, c := range []struct {
		args []string
		want string
	}{
		{[]string{"--rounds", "0"}, "--rounds ≥ 1"},
		{[]string{"extra"}, "no arguments"},
		{[]string{"--backend", "qemu"}, "unknown backend"},
	} {
		err := GuestStartCommand(context.Background(), c.args, io.Discard, io.Discard)
		if err == nil || !strings.Contains(err.Error(), c.want) {
			t.Errorf("bench --guest-start %q: %v, want an error saying %q", c.args, err, c.want)
		}
	}
}
