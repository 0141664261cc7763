package bench

import "encoding/base64"

// ImageCost is what one screenshot costs to send to the model.
type ImageCost struct {
	View         string `json:"view"`
	Width        int    `json:"width"`
	Height       int    `json:"height"`
	PNGBytes     int    `json:"png_bytes"`
	Base64Bytes  int    `json:"base64_bytes"`
	DataURLBytes int    `json:"data_url_bytes"`
	Tokens       int    `json:"est_input_tokens"`
}

// dataURLPrefix starts every screenshot sent to the model (docs/design.md, "The computer driver").
const dataURLPrefix = "data:image/png;base64,"

// patchSide is the side of the square patches that OpenAI's patch-based
// image accounting counts.
const patchSide = 32

// TokensFormula states how Tokens is estimated, for the report.
const TokensFormula = "ceil(width/32) × ceil(height/32): OpenAI's patch-based image accounting " +
	"(Images and vision guide, \"Calculating costs\": one token per 32×32 px patch for models with a multiplier of 1), " +
	"assuming detail \"original\", which the computer tool's screenshots use, sends these sizes without " +
	"downscaling. A model with a multiplier, or a lower patch cap, changes it; the base64 text is not what is counted."

// BytesFormula states how the byte sizes are computed.
const BytesFormula = "base64 = 4 × ceil(png/3); data URL = base64 + len(\"data:image/png;base64,\") = base64 + 22"

func imageCost(view string, w, h, pngBytes int) ImageCost {
	b64 := base64.StdEncoding.EncodedLen(pngBytes)
	return ImageCost{
		View: view, Width: w, Height: h,
		PNGBytes:     pngBytes,
		Base64Bytes:  b64,
		DataURLBytes: len(dataURLPrefix) + b64,
		Tokens:       imageTokens(w, h),
	}
}

// imageTokens is the estimated input tokens of a w×h image (TokensFormula).
func imageTokens(w, h int) int {
	return ((w + patchSide - 1) / patchSide) * ((h + patchSide - 1) / patchSide)
}
