package browser

import (
	"github.com/openai/openai-go/v3/packages/param"
	"github.com/openai/openai-go/v3/responses"
)

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

// inputImage validates img and converts it to the SDK's input_image.
func inputImage(img Image) (*responses.ResponseInputImageContentParam, error) {
	if img.ImageURL == nil && img.FileID == nil {
		return nil, invalidResult("image has neither image_url nor file_id")
	}
	out := &responses.ResponseInputImageContentParam{}
	if img.ImageURL != nil {
		if err := checkText("image_url", *img.ImageURL, true, 0); err != nil {
			return nil, err
		}
		out.ImageURL = param.NewOpt(*img.ImageURL)
	}
	if img.FileID != nil {
		if err := checkText("file_id", *img.FileID, true, 0); err != nil {
			return nil, err
		}
		out.FileID = param.NewOpt(*img.FileID)
	}
	if img.Detail != nil {
		switch *img.Detail {
		case DetailAuto, DetailLow, DetailHigh, DetailOriginal:
			out.Detail = responses.ResponseInputImageContentDetail(*img.Detail)
		default:
			return nil, invalidResult("image detail %q is not auto, low, high or original", *img.Detail)
		}
	}
	if img.PromptCacheBreakpoint != nil {
		if img.PromptCacheBreakpoint.Mode != "explicit" {
			return nil, invalidResult(`prompt_cache_breakpoint mode %q is not "explicit"`, img.PromptCacheBreakpoint.Mode)
		}
		out.PromptCacheBreakpoint = responses.NewResponseInputImageContentPromptCacheBreakpointParam()
	}
	return out, nil
}
