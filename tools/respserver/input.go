package respserver

import (
	"bytes"
	"encoding/base64"
	"encoding/json"
	"fmt"
	"image/png"
	"strings"
)

// InputStats is what a request's input held, measured as the server received
// it, so a test can check what a context budget let through.
type InputStats struct {
	// Bytes is the size of the input's JSON as sent.
	Bytes int
	// Items counts the input's items.
	Items int
	// Images counts the images that show something: computer screenshots
	// and input_image content, by URL or file id.
	Images int
	// Placeholders counts 1×1 images: what a context budget leaves of a
	// dropped screenshot, where the API requires an image.
	Placeholders int
	// Calls are the call ids of the calls the input holds (computer,
	// function and custom tool calls), and Answered those an output in the
	// input answers.
	Calls    []string
	Answered []string
	// Current says the newest image of the input, if it has any, is a real
	// one and not a placeholder.
	Current bool
}

// inputImage is one image of an input, in order.
type inputImage struct {
	placeholder bool
}

// inspect measures a request's input. A string input is one item without
// images.
func inspect(raw json.RawMessage) InputStats {
	st := InputStats{Bytes: len(raw), Current: true}
	var items []json.RawMessage
	if json.Unmarshal(raw, &items) != nil {
		if len(bytes.TrimSpace(raw)) > 0 {
			st.Items = 1
		}
		return st
	}
	st.Items = len(items)
	var images []inputImage
	for _, it := range items {
		var item struct {
			Type    string          `json:"type"`
			CallID  string          `json:"call_id"`
			Output  json.RawMessage `json:"output"`
			Content json.RawMessage `json:"content"`
		}
		if json.Unmarshal(it, &item) != nil {
			continue
		}
		switch item.Type {
		case "computer_call", "function_call", "custom_tool_call":
			st.Calls = append(st.Calls, item.CallID)
		case "computer_call_output":
			st.Answered = append(st.Answered, item.CallID)
			var shot struct {
				ImageURL string `json:"image_url"`
				FileID   string `json:"file_id"`
			}
			if json.Unmarshal(item.Output, &shot) == nil && (shot.ImageURL != "" || shot.FileID != "") {
				images = append(images, inputImage{placeholder: isPlaceholder(shot.ImageURL)})
			}
		case "function_call_output", "custom_tool_call_output":
			st.Answered = append(st.Answered, item.CallID)
			images = append(images, contentImages(item.Output)...)
		case "message", "":
			images = append(images, contentImages(item.Content)...)
		}
	}
	for _, im := range images {
		if im.placeholder {
			st.Placeholders++
		} else {
			st.Images++
		}
	}
	if len(images) > 0 {
		st.Current = !images[len(images)-1].placeholder
	}
	return st
}

// contentImages are the input_image parts of a content list (nothing for
// text).
func contentImages(raw json.RawMessage) []inputImage {
	var parts []struct {
		Type     string `json:"type"`
		ImageURL string `json:"image_url"`
	}
	if json.Unmarshal(raw, &parts) != nil {
		return nil
	}
	var out []inputImage
	for _, p := range parts {
		if p.Type == "input_image" {
			out = append(out, inputImage{placeholder: isPlaceholder(p.ImageURL)})
		}
	}
	return out
}

// isPlaceholder says whether url is a PNG data URL of a 1×1 image. Only the
// header is decoded: a request may carry dozens of screenshots.
func isPlaceholder(url string) bool {
	const prefix = "data:image/png;base64,"
	if !strings.HasPrefix(url, prefix) {
		return false
	}
	head := url[len(prefix):]
	// 33 bytes hold the PNG signature and the IHDR chunk.
	if len(head) > 44 {
		head = head[:44]
	}
	data, err := base64.StdEncoding.DecodeString(head)
	if err != nil {
		return false
	}
	cfg, err := png.DecodeConfig(bytes.NewReader(data))
	return err == nil && cfg.Width == 1 && cfg.Height == 1
}

// unanswered lists the calls of a stateless input that no output in it
// answers: the API refuses such a request, since the model would see a call
// without its result.
func unanswered(st InputStats) []string {
	answered := map[string]bool{}
	for _, id := range st.Answered {
		answered[id] = true
	}
	var problems []string
	for _, id := range st.Calls {
		if !answered[id] {
			problems = append(problems, fmt.Sprintf("call %s in the input has no output in it (every call of a store-false history must be answered)", id))
		}
	}
	return problems
}

// inspectBody measures the input of a request body.
func inspectBody(body []byte) InputStats {
	var req struct {
		Input json.RawMessage `json:"input"`
	}
	_ = json.Unmarshal(body, &req)
	return inspect(req.Input)
}
