package browser

// ImageDetail is an image's detail level.
type ImageDetail string

// The detail levels of an input_image.
const (
	DetailAuto     ImageDetail = "auto"
	DetailLow      ImageDetail = "low"
	DetailHigh     ImageDetail = "high"
	DetailOriginal ImageDetail = "original"
)

// CacheBreakpoint marks the end of a reusable prompt prefix. Mode must be
// "explicit".
type CacheBreakpoint struct {
	Mode string `json:"mode"`
}

// Image is what screenshot and zoom return: a native input_image with at
// least one source. A source that is set (non-nil) must be non-empty; both
// may be set. Detail and PromptCacheBreakpoint may be nil.
type Image struct {
	ImageURL              *string          `json:"image_url,omitempty"`
	FileID                *string          `json:"file_id,omitempty"`
	Detail                *ImageDetail     `json:"detail,omitempty"`
	PromptCacheBreakpoint *CacheBreakpoint `json:"prompt_cache_breakpoint,omitempty"`
}

// checkImage validates img and returns a copy the driver cannot change.
func checkImage(img Image) (*Image, error) {
	if img.ImageURL == nil && img.FileID == nil {
		return nil, invalidResult("image has neither image_url nor file_id")
	}
	out := &Image{}
	if img.ImageURL != nil {
		if err := checkText("image_url", *img.ImageURL, true, 0); err != nil {
			return nil, err
		}
		out.ImageURL = Text(*img.ImageURL)
	}
	if img.FileID != nil {
		if err := checkText("file_id", *img.FileID, true, 0); err != nil {
			return nil, err
		}
		out.FileID = Text(*img.FileID)
	}
	if img.Detail != nil {
		switch d := *img.Detail; d {
		case DetailAuto, DetailLow, DetailHigh, DetailOriginal:
			out.Detail = &d
		default:
			return nil, invalidResult("image detail %q is not auto, low, high or original", d)
		}
	}
	if img.PromptCacheBreakpoint != nil {
		if img.PromptCacheBreakpoint.Mode != "explicit" {
			return nil, invalidResult(`prompt_cache_breakpoint mode %q is not "explicit"`, img.PromptCacheBreakpoint.Mode)
		}
		out.PromptCacheBreakpoint = &CacheBreakpoint{Mode: "explicit"}
	}
	return out, nil
}
