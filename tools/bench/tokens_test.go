package bench

import (
	"encoding/base64"
	"strings"
	"testing"
)

func TestImageTokens(t *testing.T) {
	for _, tc := range []struct{ w, h, want int }{
		{1440, 900, 45 * 29}, // 900/32 = 28.1: a partial patch counts
		{1280, 800, 40 * 25},
		{1280, 720, 40 * 23},
		{1920, 1080, 60 * 34},
		{32, 32, 1},
		{33, 1, 2},
	} {
		if got := imageTokens(tc.w, tc.h); got != tc.want {
			t.Errorf("imageTokens(%d, %d) = %d, want %d", tc.w, tc.h, got, tc.want)
		}
	}
}

func TestImageCostBytes(t *testing.T) {
	for _, n := range []int{0, 1, 2, 3, 4, 222_100} {
		c := imageCost("native", 1440, 900, n)
		b64 := base64.StdEncoding.EncodeToString(make([]byte, n))
		if c.PNGBytes != n || c.Base64Bytes != len(b64) || c.DataURLBytes != len("data:image/png;base64,"+b64) {
			t.Errorf("%d bytes: %+v, want base64 %d", n, c, len(b64))
		}
	}
	if !strings.Contains(TokensFormula, "32") || !strings.Contains(BytesFormula, "4 × ceil(png/3)") {
		t.Error("the formulas no longer state what is computed")
	}
}
