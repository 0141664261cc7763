// Package scaling maps between screen space and the image space the model
// sees: crop first, then scale (SPEC §3). A point outside the image is an
// error, never clamped.
package scaling

// Size is a width and height in pixels.
type Size struct {
	W int `json:"width"`
	H int `json:"height"`
}

// Rect is a rectangle in screen pixels.
type Rect struct {
	X int `json:"x"`
	Y int `json:"y"`
	W int `json:"width"`
	H int `json:"height"`
}

// Transform is how one screenshot was made from the screen: the part of the
// screen (Crop) scaled to Image. screen = crop.origin + image_point × crop.size / image.size.
type Transform struct {
	Screen Size `json:"screen"`
	Crop   Rect `json:"crop"`
	Image  Size `json:"image"`
}
