package bench

import (
	"slices"
	"strings"
	"testing"
	"time"
)

func TestParseSizes(t *testing.T) {
	for _, tc := range []struct {
		in      string
		want    []Size
		wantErr string
	}{
		{in: "1440x900", want: []Size{{1440, 900}}},
		{in: "1440x900, 1920X1080", want: []Size{{1440, 900}, {1920, 1080}}},
		{in: "", wantErr: "no size given"},
		{in: "1440", wantErr: `bad size "1440": want WIDTHxHEIGHT`},
		{in: "1440x", wantErr: `bad size "1440x"`},
		{in: "axb", wantErr: `bad size "axb"`},
		{in: "1440x900,", wantErr: `bad size ""`},
		{in: "-1440x900", wantErr: "out of range"},
		{in: "320x200", wantErr: "320x200 is out of range: 640x480 to 8192x8192"},
		{in: "9000x900", wantErr: "out of range"},
		{in: "1440x900,1440x900", wantErr: "1440x900 is given twice"},
	} {
		got, err := ParseSizes(tc.in)
		if tc.wantErr != "" {
			if err == nil || !strings.Contains(err.Error(), tc.wantErr) || !strings.HasPrefix(err.Error(), "--size") {
				t.Errorf("ParseSizes(%q) error = %v, want one naming --size and containing %q", tc.in, err, tc.wantErr)
			}
			continue
		}
		if err != nil || !slices.Equal(got, tc.want) {
			t.Errorf("ParseSizes(%q) = %v, %v; want %v", tc.in, got, err, tc.want)
		}
	}
}

func TestValidateDuration(t *testing.T) {
	sizes := []Size{{1440, 900}}
	for _, tc := range []struct {
		d       time.Duration
		wantErr bool
	}{
		{DefaultDuration, false},
		{MinDuration, false},
		{MaxDuration, false},
		{0, true},
		{-time.Second, true},
		{MinDuration - 1, true},
		{MaxDuration + 1, true},
	} {
		err := Options{Sizes: sizes, Duration: tc.d}.Validate()
		if (err != nil) != tc.wantErr {
			t.Errorf("duration %v: error %v, want error: %v", tc.d, err, tc.wantErr)
		}
		if err != nil && !strings.Contains(err.Error(), "--duration") {
			t.Errorf("duration %v: error %q does not name the flag", tc.d, err)
		}
	}
	if err := (Options{Duration: time.Second}).Validate(); err == nil || !strings.Contains(err.Error(), "--size") {
		t.Errorf("no sizes: %v", err)
	}
}
