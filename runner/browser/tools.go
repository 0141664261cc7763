package browser

import (
	"github.com/openai/openai-go/v3/packages/param"
	"github.com/openai/openai-go/v3/responses"

	"github.com/agentd-dev/agentd/actions/browser"
)

// Tools declares the enabled members as strict function tools, in the
// toolset's order. Every call's output is a JSON object {ok, result, error,
// state}; screenshot and zoom add the image after it.
func Tools(t *browser.BrowserToolset) []responses.ToolUnionParam {
	members := t.Members()
	out := make([]responses.ToolUnionParam, 0, len(members))
	for _, m := range members {
		f := FunctionTool(m)
		out = append(out, responses.ToolUnionParam{OfFunction: &f})
	}
	return out
}

// FunctionTool returns member m's function tool: its name, description and
// strict parameter schema (every field required, null where the contract
// allows it, no additional properties at any level). It returns the zero
// value for a name that is no member.
func FunctionTool(m browser.Member) responses.FunctionToolParam {
	doc, ok := toolDocs[m]
	if !ok {
		return responses.FunctionToolParam{}
	}
	return responses.FunctionToolParam{
		Name:        string(m),
		Description: param.NewOpt(doc.description),
		Strict:      param.NewOpt(true),
		Parameters:  object(doc.props),
	}
}

// prop is one named property of a schema, kept in order.
type prop struct {
	name   string
	schema map[string]any
}

type toolDoc struct {
	description string
	props       []prop
}

// object makes a strict object schema of props.
func object(props []prop) map[string]any {
	properties := make(map[string]any, len(props))
	required := make([]string, 0, len(props))
	for _, p := range props {
		properties[p.name] = p.schema
		required = append(required, p.name)
	}
	return map[string]any{
		"type":                 "object",
		"properties":           properties,
		"required":             required,
		"additionalProperties": false,
	}
}

func str(desc string) map[string]any { return map[string]any{"type": "string", "description": desc} }

func nullableStr(desc string) map[string]any {
	return map[string]any{"type": []string{"string", "null"}, "description": desc}
}

func enumOf(desc string, values ...string) map[string]any {
	return map[string]any{"type": "string", "enum": values, "description": desc}
}

func integer(desc string, min, max int64) map[string]any {
	return map[string]any{"type": "integer", "minimum": min, "maximum": max, "description": desc}
}

func strList(desc string) map[string]any {
	return map[string]any{"type": "array", "items": map[string]any{"type": "string"}, "description": desc}
}

func modifierList() map[string]any {
	return map[string]any{
		"type":        "array",
		"items":       map[string]any{"type": "string", "enum": []string{"Control", "Alt", "Meta", "Shift"}},
		"description": "Modifier keys held during the action, each at most once; may be empty.",
	}
}

var (
	tabIDProp   = prop{"tab_id", nullableStr("Id of the tab from the state; null for the active tab.")}
	targetProp  = prop{"target", str("Ref of the element, from the latest page read.")}
	filterProp  = prop{"filter", enumOf("all: every element; interactive: controls only.", "all", "interactive")}
	xProp       = prop{"x", integer("X in CSS pixels of the whole visible area of the page.", 0, browser.MaxSafeInteger)}
	yProp       = prop{"y", integer("Y in CSS pixels of the whole visible area of the page.", 0, browser.MaxSafeInteger)}
	grantIDProp = prop{"grant_id", str("Grant id issued by the application for one approved file (not a path or URL); at most 256 bytes.")}
)

var toolDocs = map[browser.Member]toolDoc{
	browser.Navigate: {"Open a URL in a tab. Needs approval; the URL must be allowed by the application's policy.",
		[]prop{{"url", str("Absolute URL to open.")}, tabIDProp}},
	browser.ReadPage: {"Read the page: its visible text and its controls, each with a ref to act on.",
		[]prop{filterProp, tabIDProp}},
	browser.GetPageText: {"Read the visible text of the page.",
		[]prop{tabIDProp}},
	browser.Find: {"Find elements or text on the page matching a query.",
		[]prop{{"query", str("What to look for.")}, tabIDProp}},
	browser.Click: {"Click an element by its ref. Needs approval.",
		[]prop{targetProp, tabIDProp}},
	browser.Type: {"Type text into an element by its ref, or into the focused control when target is null. Needs approval.",
		[]prop{{"text", str("Text to type.")}, {"target", nullableStr("Ref of the element, or null for the focused control.")}, tabIDProp}},
	browser.Key: {"Press keys in the page. Needs approval.",
		[]prop{{"keys", strList("Key names, for example Enter or Control+a.")}, tabIDProp}},
	browser.Scroll: {"Scroll the page. Needs approval.",
		[]prop{{"direction", enumOf("Direction to scroll.", "up", "down", "left", "right")},
			{"amount", integer("How far to scroll; not negative.", 0, browser.MaxSafeInteger)}, tabIDProp}},
	browser.ScrollTo: {"Scroll an element into view by its ref. Needs approval. Read the page again before using a control afterwards.",
		[]prop{targetProp, tabIDProp}},
	browser.WaitFor: {"Wait until text appears on the page.",
		[]prop{{"text", str("Text to wait for: not empty, at most 256 bytes after white space is collapsed.")},
			{"timeout_ms", integer("How long to wait, in milliseconds.", 1, browser.MaxTimeoutMS)}, tabIDProp}},
	browser.SelectOption: {"Select options of a select or listbox by its ref. Needs approval.",
		[]prop{targetProp, {"values", strList("Values of the options to select.")}, tabIDProp}},
	browser.Hover: {"Move the pointer over an element by its ref. Needs approval.",
		[]prop{targetProp, tabIDProp}},
	browser.Screenshot: {"Take a screenshot of the visible area of the page.",
		[]prop{tabIDProp}},
	browser.Zoom: {"Take a screenshot of a region of the visible area; later coordinates stay relative to the whole visible area.",
		[]prop{{"region", map[string]any{"type": "array", "minItems": 4, "maxItems": 4,
			"items":       map[string]any{"type": "integer", "minimum": 0, "maximum": int64(browser.MaxSafeInteger)},
			"description": "[left, top, right, bottom] in CSS pixels, with right > left and bottom > top."}}, tabIDProp}},
	browser.NewTab: {"Open a new tab, blank when url is null. Needs approval; a URL must be allowed by the application's policy.",
		[]prop{{"url", nullableStr("Absolute URL to open, or null for a blank tab.")}}},
	browser.ListTabs: {"List the open tabs and which one is active.",
		nil},
	browser.SwitchTab: {"Make a tab the active one. Needs approval.",
		[]prop{{"tab_id", str("Id of the tab from the state.")}}},
	browser.CloseTab: {"Close a tab. Needs approval.",
		[]prop{{"tab_id", str("Id of the tab from the state.")}}},

	browser.ReadPageScoped: {"Read one section of the page: with root null, discover the visible sections (scopes); with a scope ref, read inside it.",
		[]prop{tabIDProp, {"root", nullableStr("Scope ref from an earlier scoped read, or null; not a selector.")},
			{"depth", integer("How deep to read inside the root.", browser.MinDepth, browser.MaxDepth)}, filterProp}},
	browser.ClickAt: {"Click at a point of the visible area. Needs approval.",
		[]prop{tabIDProp, xProp, yProp, {"button", enumOf("Mouse button.", "left", "right", "middle")},
			{"click_count", integer("1, 2 or 3 clicks.", 1, browser.MaxClickCount)}, {"keys", modifierList()}}},
	browser.DragPath: {"Drag the pointer along a path of points with the left button held. Needs approval.",
		[]prop{tabIDProp, {"path", map[string]any{"type": "array", "minItems": browser.MinPathPoints, "maxItems": browser.MaxPathPoints,
			"items":       object([]prop{xProp, yProp}),
			"description": "2 to 100 points {x, y} in CSS pixels of the whole visible area."}}, {"keys", modifierList()}}},
	browser.HoldKeys: {"Hold keys down for a while, then release them. Needs approval.",
		[]prop{tabIDProp, {"keys", map[string]any{"type": "array", "minItems": 1, "maxItems": browser.MaxHeldKeys,
			"items":       map[string]any{"type": "string"},
			"description": "1 to 8 distinct key names, each at most 64 bytes."}},
			{"duration_ms", integer("How long to hold them, in milliseconds.", 1, browser.MaxHoldMS)}}},
	browser.HoverAt: {"Move the pointer to a point of the visible area without pressing a button. Needs approval.",
		[]prop{tabIDProp, xProp, yProp}},
	browser.SetChecked: {"Check or uncheck a checkbox by its ref. Needs approval.",
		[]prop{tabIDProp, targetProp, {"checked", map[string]any{"type": "boolean", "description": "The state to set."}}}},

	browser.ReadDiagnostics: {"Read recent console or network diagnostics of the page, filtered by the application. Needs approval.",
		[]prop{tabIDProp, {"source", enumOf("What to read.", "console", "network")},
			{"limit", integer("How many entries at most.", 1, browser.MaxDiagnosticsLimit)}}},
	browser.RunScript: {"Run JavaScript in the page and return its text result. Needs approval.",
		[]prop{tabIDProp, {"source", str("The script; not empty.")},
			{"timeout_ms", integer("How long to wait for it, in milliseconds.", 1, browser.MaxTimeoutMS)}}},
	browser.UploadFile: {"Upload the file of a grant the application issued. Needs approval.",
		[]prop{grantIDProp}},
	browser.DownloadFile: {"Download to the file of a grant the application issued. Needs approval.",
		[]prop{grantIDProp}},
}
