package browser

import (
	"github.com/openai/openai-go/v3/packages/param"
	"github.com/openai/openai-go/v3/responses"

	"github.com/agentd-dev/agentd/actions/browser"
)

// CallOf takes the fields of a function_call output item.
func CallOf(fc responses.ResponseFunctionToolCall) browser.Call {
	return browser.Call{CallID: fc.CallID, Name: fc.Name, Arguments: fc.Arguments}
}

// OutputParam is o as a function_call_output: its text alone, or the text
// then the image as an input_image (o.Image was validated by the toolset).
func OutputParam(o browser.Output) responses.ResponseInputItemFunctionCallOutputParam {
	out := responses.ResponseInputItemFunctionCallOutputParam{CallID: param.NewOpt(o.CallID)}
	if o.Image == nil {
		out.Output = responses.ResponseInputItemFunctionCallOutputOutputUnionParam{OfString: param.NewOpt(o.Text)}
		return out
	}
	out.Output = responses.ResponseInputItemFunctionCallOutputOutputUnionParam{
		OfResponseFunctionCallOutputItemArray: responses.ResponseFunctionCallOutputItemListParam{
			{OfInputText: &responses.ResponseInputTextContentParam{Text: o.Text}},
			{OfInputImage: inputImage(*o.Image)},
		},
	}
	return out
}

// InputItems returns a batch's outputs as input items of the next request.
func InputItems(r browser.Result) responses.ResponseInputParam {
	items := make(responses.ResponseInputParam, len(r.Outputs))
	for i, o := range r.Outputs {
		p := OutputParam(o)
		items[i] = responses.ResponseInputItemUnionParam{OfFunctionCallOutput: &p}
	}
	return items
}

// inputImage is img as the SDK's input_image.
func inputImage(img browser.Image) *responses.ResponseInputImageContentParam {
	out := &responses.ResponseInputImageContentParam{}
	if img.ImageURL != nil {
		out.ImageURL = param.NewOpt(*img.ImageURL)
	}
	if img.FileID != nil {
		out.FileID = param.NewOpt(*img.FileID)
	}
	if img.Detail != nil {
		out.Detail = responses.ResponseInputImageContentDetail(*img.Detail)
	}
	if img.PromptCacheBreakpoint != nil {
		out.PromptCacheBreakpoint = responses.NewResponseInputImageContentPromptCacheBreakpointParam()
	}
	return out
}
