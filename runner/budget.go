package runner

import (
	"bytes"
	"encoding/base64"
	"encoding/json"
	"errors"
	"fmt"
	"image"
	"image/png"
	"slices"

	"github.com/openai/openai-go/v3/packages/param"
	"github.com/openai/openai-go/v3/responses"
)

// ContextBudget bounds what each request of a run that keeps its own history
// carries (docs/design.md, "Ledger and resume"). The runner keeps the whole
// history (and the ledger gets all of it); each request gets a projection of
// it: every item stays, in order — messages, reasoning, calls with their
// pending safety checks, and every call's output — and only images go, oldest
// first. A dropped computer screenshot becomes a 1×1 placeholder image (the
// API requires an image in a computer_call_output) and one note at the end of
// the input says so; a dropped image in a function's output or a message
// becomes a text part saying so. The images of the latest outputs and the
// newest image are the current observation and are always kept.
//
// A budget needs Store false and no PreviousResponseID, and is not combined
// with ContextManagement. Its requests ask for the reasoning's encrypted
// content (include reasoning.encrypted_content), which a history re-sent
// without storage needs.
type ContextBudget struct {
	// MaxInputBytes bounds the JSON bytes of a request's input; 0 is no bound.
	MaxInputBytes int
	// MaxImages bounds the images a request's input shows; 0 is no bound.
	// Placeholders are not counted.
	MaxImages int
}

// DroppedNote is the note a projected request ends with when it replaced
// computer screenshots with placeholders.
const DroppedNote = "Context budget: to keep this request small, the screenshots of earlier computer calls were " +
	"replaced by a 1x1 placeholder image. The latest screenshot shows the screen as it is now."

// droppedText replaces a dropped image in a function's output or a message.
const droppedText = "[image dropped from this request by the context budget]"

// placeholderURL is a 1×1 PNG as a data URL.
var placeholderURL = func() string {
	var buf bytes.Buffer
	_ = png.Encode(&buf, image.NewGray(image.Rect(0, 0, 1, 1))) // in memory: it cannot fail
	return "data:image/png;base64," + base64.StdEncoding.EncodeToString(buf.Bytes())
}()

// checkBudget refuses a budget the run cannot keep, before anything runs:
// with the API's own compaction, with storage, or one too small for what
// the first request must carry.
func checkBudget(opts *RunOptions) error {
	b := opts.ContextBudget
	switch {
	case b == nil:
		return nil
	case b.MaxInputBytes < 0 || b.MaxImages < 0:
		return fmt.Errorf("ContextBudget{MaxInputBytes: %d, MaxImages: %d}: a limit cannot be negative (0 is no limit)", b.MaxInputBytes, b.MaxImages)
	case b.MaxInputBytes == 0 && b.MaxImages == 0:
		return errors.New("ContextBudget has no limit: set MaxInputBytes, MaxImages or both")
	case len(opts.ContextManagement) > 0:
		return errors.New("ContextBudget with ContextManagement: choose the API's compaction or the local budget, not both")
	case !opts.Store.Valid() || opts.Store.Value:
		return errors.New("ContextBudget needs Store false: a budget projects the history the runner keeps, and a stored run keeps it on the server")
	case opts.PreviousResponseID != "":
		return errors.New("ContextBudget with PreviousResponseID: a budget cannot shape a conversation stored on the server; start from its items instead")
	}
	_, err := b.project(firstInput(*opts))
	return err
}

// request is params as sent: the history projected into the budget, with
// the reasoning's encrypted content asked for. params itself (what the
// ledger saves) is left whole. Without a budget it is params.
func (b *ContextBudget) request(params responses.ResponseNewParams) (responses.ResponseNewParams, error) {
	if b == nil {
		return params, nil
	}
	input, err := b.project(params.Input)
	if err != nil {
		return params, err
	}
	params.Input = input
	if !slices.Contains(params.Include, responses.ResponseIncludableReasoningEncryptedContent) {
		params.Include = append(slices.Clip(params.Include), responses.ResponseIncludableReasoningEncryptedContent)
	}
	return params, nil
}

// imageSlot is one image of the history.
type imageSlot struct {
	item     int
	part     int  // index in the content list; -1 for a computer screenshot
	delta    int  // bytes the item's JSON changes by when the image is dropped
	required bool // part of the current observation
	drop     bool
}

// projected is a history item being projected.
type projected struct {
	raw []byte         // the item as it would be sent whole
	doc map[string]any // decoded, for items with images
	// canon is the size of doc marshalled: the base a dropped image's delta
	// applies to.
	canon int
}

// project fits input into the budget (see ContextBudget).
func (b *ContextBudget) project(input responses.ResponseNewParamsInputUnion) (responses.ResponseNewParamsInputUnion, error) {
	if input.OfInputItemList == nil {
		raw, err := json.Marshal(input.OfString.Value)
		if err != nil {
			return input, fmt.Errorf("context budget: %w", err)
		}
		if b.MaxInputBytes > 0 && len(raw) > b.MaxInputBytes {
			return input, fmt.Errorf("context budget: the task alone takes %d bytes, more than MaxInputBytes %d", len(raw), b.MaxInputBytes)
		}
		return input, nil
	}
	history := input.OfInputItemList
	items := make([]projected, len(history))
	var slots []imageSlot
	size := 1 + len(history) // the brackets and commas
	if len(history) == 0 {
		size = 2
	}
	latest := 0 // the first item after the model's last one
	for i, h := range history {
		raw, err := json.Marshal(h)
		if err != nil {
			return input, fmt.Errorf("context budget: item %d: %w", i, err)
		}
		items[i].raw = raw
		size += len(raw)
		typ, found, err := imagesOf(&items[i], i, &slots)
		if err != nil {
			return input, err
		}
		if !found {
			typ = itemType(raw)
		}
		if fromModel(typ) {
			latest = i + 1
		}
	}
	for k := range slots {
		slots[k].required = slots[k].item >= latest || k == len(slots)-1
	}
	images := 0
	for _, s := range slots {
		if s.required {
			images++
		}
	}
	if b.MaxImages > 0 && images > b.MaxImages {
		return input, fmt.Errorf("context budget: the current observation holds %d images, more than MaxImages %d", images, b.MaxImages)
	}
	// Newest first, the older images fill what MaxImages leaves.
	for k := len(slots) - 1; k >= 0; k-- {
		if slots[k].required {
			continue
		}
		if b.MaxImages > 0 && images >= b.MaxImages {
			slots[k].drop = true
			continue
		}
		images++
	}
	note := noteSize()
	// total is the input's size with the images marked dropped: an item
	// losing one is sent re-marshalled, so its size starts from canon.
	total := func() int {
		n, shots := size, false
		touched := map[int]bool{}
		for _, s := range slots {
			if s.drop {
				n += s.delta
				shots = shots || s.part < 0
				if !touched[s.item] {
					touched[s.item] = true
					n += items[s.item].canon - len(items[s.item].raw)
				}
			}
		}
		if shots {
			n += note + 1
		}
		return n
	}
	if b.MaxInputBytes > 0 {
		// Oldest first, the kept older images go until the input fits.
		for k := 0; k < len(slots) && total() > b.MaxInputBytes; k++ {
			if !slots[k].required {
				slots[k].drop = true
			}
		}
		if n := total(); n > b.MaxInputBytes {
			return input, fmt.Errorf("context budget: the request must carry %d bytes (%d items: messages, reasoning, calls with every output, and the current observation's %d image(s); every older image dropped), more than MaxInputBytes %d",
				n, len(items), len(slots)-countDropped(slots), b.MaxInputBytes)
		}
	}
	return build(history, items, slots)
}

func countDropped(slots []imageSlot) int {
	n := 0
	for _, s := range slots {
		if s.drop {
			n++
		}
	}
	return n
}

// build makes the projected input: the items whose images were dropped
// rewritten, the others as they were, and the note if a screenshot went.
func build(history responses.ResponseInputParam, items []projected, slots []imageSlot) (responses.ResponseNewParamsInputUnion, error) {
	out := slices.Clone(history)
	shots := false
	for i := range items {
		it := &items[i]
		changed := false
		for _, s := range slots {
			if s.item != i || !s.drop {
				continue
			}
			changed = true
			shots = shots || s.part < 0
			dropImage(it.doc, s.part)
		}
		if !changed {
			continue
		}
		raw, err := json.Marshal(it.doc)
		if err != nil {
			return responses.ResponseNewParamsInputUnion{}, fmt.Errorf("context budget: item %d: %w", i, err)
		}
		out[i] = param.Override[responses.ResponseInputItemUnionParam](json.RawMessage(raw))
	}
	if shots {
		out = append(out, responses.ResponseInputItemParamOfMessage(DroppedNote, responses.EasyInputMessageRoleUser))
	}
	return responses.ResponseNewParamsInputUnion{OfInputItemList: out}, nil
}

func noteSize() int {
	raw, _ := json.Marshal(responses.ResponseInputItemParamOfMessage(DroppedNote, responses.EasyInputMessageRoleUser))
	return len(raw)
}

// itemType reads an item's type; a message may leave it out.
func itemType(raw []byte) string {
	var head struct {
		Type string `json:"type"`
		Role string `json:"role"`
	}
	_ = json.Unmarshal(raw, &head)
	if head.Type == "" && head.Role != "" {
		head.Type = "message"
	}
	if head.Type == "message" && head.Role == "assistant" {
		return "assistant_message"
	}
	return head.Type
}

// fromModel says whether an item of type typ is one the model produced (a
// call, reasoning, an assistant message, a server tool's result) rather
// than one the runner or the user added (outputs, user messages).
func fromModel(typ string) bool {
	switch typ {
	case "message", "computer_call_output", "function_call_output", "custom_tool_call_output",
		"mcp_approval_response", "item_reference", "":
		return false
	}
	return true
}

// imagesOf finds the images of an item (computer screenshots, input_image
// parts of a function's output or a message) and adds them to slots, with
// what dropping each saves. found says the item had any; typ is its type
// then.
func imagesOf(it *projected, i int, slots *[]imageSlot) (typ string, found bool, err error) {
	if !bytes.Contains(it.raw, []byte(`"image_url"`)) && !bytes.Contains(it.raw, []byte(`"file_id"`)) {
		return "", false, nil
	}
	dec := json.NewDecoder(bytes.NewReader(it.raw))
	dec.UseNumber() // numbers kept as written
	var doc map[string]any
	if err := dec.Decode(&doc); err != nil {
		return "", false, fmt.Errorf("context budget: item %d: %w", i, err)
	}
	typ, _ = doc["type"].(string)
	role, _ := doc["role"].(string)
	if typ == "" && role != "" {
		typ = "message"
	}
	var before []imageSlot
	switch typ {
	case "computer_call_output":
		if out, ok := doc["output"].(map[string]any); ok && (out["image_url"] != nil || out["file_id"] != nil) {
			before = append(before, imageSlot{item: i, part: -1})
		}
	case "function_call_output", "custom_tool_call_output", "message":
		key := "output"
		if typ == "message" {
			key = "content"
		}
		parts, _ := doc[key].([]any)
		for k, p := range parts {
			if m, ok := p.(map[string]any); ok && m["type"] == "input_image" {
				before = append(before, imageSlot{item: i, part: k})
			}
		}
	}
	if typ == "message" && role == "assistant" {
		typ = "assistant_message"
	}
	if len(before) == 0 {
		return typ, true, nil
	}
	canon, err := json.Marshal(doc)
	if err != nil {
		return "", false, fmt.Errorf("context budget: item %d: %w", i, err)
	}
	it.doc, it.canon = doc, len(canon)
	for _, s := range before {
		old, err := json.Marshal(imageValue(doc, s.part))
		if err != nil {
			return "", false, fmt.Errorf("context budget: item %d: %w", i, err)
		}
		repl, _ := json.Marshal(replacement(doc, s.part))
		s.delta = len(repl) - len(old)
		*slots = append(*slots, s)
	}
	return typ, true, nil
}

// imageValue is the value an image slot replaces: the screenshot object,
// or the content part.
func imageValue(doc map[string]any, part int) any {
	if part < 0 {
		return doc["output"]
	}
	key := "output"
	if _, ok := doc["content"]; ok {
		key = "content"
	}
	return doc[key].([]any)[part]
}

// replacement is what a dropped image becomes: the placeholder screenshot
// (at the detail the original asked for), or a text part.
func replacement(doc map[string]any, part int) any {
	if part < 0 {
		shot := map[string]any{"type": "computer_screenshot", "image_url": placeholderURL}
		if old, ok := doc["output"].(map[string]any); ok && old["detail"] != nil {
			shot["detail"] = old["detail"]
		}
		return shot
	}
	return map[string]any{"type": "input_text", "text": droppedText}
}

// dropImage replaces one image of doc.
func dropImage(doc map[string]any, part int) {
	if part < 0 {
		doc["output"] = replacement(doc, part)
		return
	}
	key := "output"
	if _, ok := doc["content"]; ok {
		key = "content"
	}
	doc[key].([]any)[part] = replacement(doc, part)
}
