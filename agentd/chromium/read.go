package chromium

import (
	"context"
	"encoding/json"
	"fmt"
	"strconv"
	"strings"
	"unicode/utf8"

	"github.com/chromedp/cdproto/accessibility"
	"github.com/chromedp/cdproto/cdp"
	"github.com/chromedp/cdproto/page"
	"github.com/chromedp/cdproto/runtime"
	"github.com/chromedp/chromedp"

	"github.com/agentd-dev/agentd/actions/browser"
)

// maxTextBytes bounds the visible text of one read; the rest is reported as
// omitted (text_limit).
const maxTextBytes = 64 << 10

// refTable holds the refs of one document generation of one tab. A ref is
// never reused: a ref from an earlier generation is simply unknown.
type refTable struct {
	tab    *tab
	loader cdp.LoaderID
	refs   map[string]refEntry
	byNode map[cdp.BackendNodeID]string
	next   int
}

type refEntry struct {
	node cdp.BackendNodeID
	role browser.Role
}

// reset invalidates every ref (tab switched, opened or closed, navigation).
func (r *refTable) reset() {
	r.tab, r.loader, r.refs, r.byNode = nil, "", nil, nil
}

// refFor returns the ref of a node in the document (t, loader), starting a
// new generation when the document changed. The same node keeps its ref
// within a generation.
func (r *refTable) refFor(t *tab, loader cdp.LoaderID, node cdp.BackendNodeID, role browser.Role) string {
	if r.tab != t || r.loader != loader {
		r.reset()
		r.tab, r.loader = t, loader
		r.refs, r.byNode = map[string]refEntry{}, map[cdp.BackendNodeID]string{}
	}
	if ref, ok := r.byNode[node]; ok {
		r.refs[ref] = refEntry{node: node, role: role}
		return ref
	}
	r.next++
	ref := "e" + strconv.Itoa(r.next)
	r.refs[ref], r.byNode[node] = refEntry{node: node, role: role}, ref
	return ref
}

// lookup finds a ref of tab t in document loader; anything else is stale.
func (r *refTable) lookup(t *tab, loader cdp.LoaderID, ref string) (refEntry, error) {
	e, ok := r.refs[ref]
	switch {
	case !ok:
		return refEntry{}, browser.NewBrowserError(fmt.Sprintf("ref %q is stale or unknown: read the page again", ref))
	case r.tab != t:
		return refEntry{}, browser.NewBrowserError(fmt.Sprintf("ref %q belongs to another tab: read this tab first", ref))
	case r.loader != loader:
		return refEntry{}, browser.NewBrowserError(fmt.Sprintf("ref %q is stale: the page changed since it was read; read the page again", ref))
	}
	return e, nil
}

// loaderID is the identity of the tab's current document.
func loaderID(ctx context.Context, s *chromedp.Target) (cdp.LoaderID, error) {
	res, err := cdp.Call(ctx, s, page.GetFrameTree, cdp.Empty{})
	if err != nil {
		return "", fmt.Errorf("frame tree: %w", err)
	}
	if res.FrameTree == nil || res.FrameTree.Frame == nil {
		return "", fmt.Errorf("frame tree: no main frame")
	}
	return res.FrameTree.Frame.LoaderID, nil
}

// evalValue evaluates a JavaScript expression in the page and decodes its
// JSON value into out.
func evalValue(ctx context.Context, s *chromedp.Target, expr string, out any) error {
	res, err := cdp.Call(ctx, s, runtime.Evaluate, runtime.EvaluateParams{Expression: expr, ReturnByValue: ptr(true), AwaitPromise: ptr(true)})
	if err != nil {
		return fmt.Errorf("evaluate: %w", err)
	}
	if res.ExceptionDetails != nil {
		return fmt.Errorf("evaluate: the page's script threw: %s", res.ExceptionDetails.Text)
	}
	if res.Result == nil || len(res.Result.Value) == 0 {
		return fmt.Errorf("evaluate: no value")
	}
	return json.Unmarshal(res.Result.Value, out)
}

func ptr[T any](v T) *T { return &v }

// visibleText is the page's rendered text (innerText: what is displayed,
// without hidden elements or markup).
const visibleTextJS = `document.body ? document.body.innerText : ""`

// privateFieldsJS finds the fields whose value is never reported: passwords,
// payment cards, one-time codes, and fields the page marks private.
const privateFieldsJS = `Array.from(document.querySelectorAll(
  'input[type=password], [autocomplete^="cc-"], [autocomplete~="cc-number"], [autocomplete~="cc-csc"], ' +
  '[autocomplete~="one-time-code"], [autocomplete~="current-password"], [autocomplete~="new-password"], [data-private]'))`

// contractRole maps an accessibility role to the contract's seven; ok is
// false for roles the contract has no place for. A link is a button: the
// model acts on it the same way (click), and its label says where it goes.
func contractRole(axRole string) (browser.Role, bool) {
	switch axRole {
	case "button", "link", "menuitem", "tab", "PopUpButton", "DisclosureTriangle":
		return browser.RoleButton, true
	case "textbox", "searchbox", "TextField", "TextFieldWithComboBox", "spinbutton":
		return browser.RoleTextbox, true
	case "combobox", "ComboBoxSelect", "ComboBoxMenuButton", "ComboBoxGrouping":
		return browser.RoleCombobox, true
	case "checkbox", "switch", "menuitemcheckbox":
		return browser.RoleCheckbox, true
	case "radio", "menuitemradio":
		return browser.RoleRadio, true
	case "slider":
		return browser.RoleSlider, true
	case "listbox":
		return browser.RoleListbox, true
	}
	return "", false
}

// axString is an accessibility value as a string ("" when absent).
func axString(v *accessibility.Value) string {
	if v == nil || len(v.Value) == 0 {
		return ""
	}
	var s string
	if json.Unmarshal(v.Value, &s) == nil {
		return s
	}
	return strings.Trim(string(v.Value), `"`)
}

func axProp(n *accessibility.Node, name accessibility.PropertyName) string {
	for _, p := range n.Properties {
		if p != nil && p.Name == name {
			return axString(p.Value)
		}
	}
	return ""
}

// cut shortens s to at most n bytes on a character boundary.
func cut(s string, n int) (string, bool) {
	if len(s) <= n {
		return s, false
	}
	for n > 0 && !utf8.RuneStart(s[n]) {
		n--
	}
	return s[:n], true
}

// omissions collects omitted codes without repeats.
type omissions struct{ codes []browser.Omitted }

func (o *omissions) add(c browser.Omitted) {
	for _, have := range o.codes {
		if have == c {
			return
		}
	}
	o.codes = append(o.codes, c)
}

// read is one structured read of a tab: text and controls.
func (b *Browser) read(ctx context.Context, t *tab, filter browser.Filter, withElements bool) (browser.BrowserReadV1, error) {
	return run(ctx, t, func(ctx context.Context, s *chromedp.Target) (browser.BrowserReadV1, error) {
		out := browser.BrowserReadV1{Version: 1, Elements: []browser.Element{}}
		var om omissions
		var text string
		if err := evalValue(ctx, s, visibleTextJS, &text); err != nil {
			return out, err
		}
		text = strings.ToValidUTF8(text, "\uFFFD")
		if short, cutOff := cut(text, maxTextBytes); cutOff {
			text = short
			om.add(browser.OmittedTextLimit)
		}
		out.Text = text
		if withElements {
			loader, err := loaderID(ctx, s)
			if err != nil {
				return out, err
			}
			els, err := b.elements(ctx, s, t, loader, filter, &om)
			if err != nil {
				return out, err
			}
			out.Elements = els
		}
		out.Omitted = om.codes
		if out.Omitted == nil {
			out.Omitted = []browser.Omitted{}
		}
		return out, nil
	})
}

// elements reads the controls of the tab's document from the accessibility
// tree and gives each a ref of this generation.
func (b *Browser) elements(ctx context.Context, s *chromedp.Target, t *tab, loader cdp.LoaderID, filter browser.Filter, om *omissions) ([]browser.Element, error) {
	tree, err := cdp.Call(ctx, s, accessibility.GetFullAXTree, accessibility.GetFullAXTreeParams{})
	if err != nil {
		return nil, fmt.Errorf("accessibility tree: %w", err)
	}
	private, err := privateNodes(ctx, s)
	if err != nil {
		return nil, err
	}
	byID := make(map[accessibility.NodeID]*accessibility.Node, len(tree.Nodes))
	for _, n := range tree.Nodes {
		byID[n.NodeID] = n
	}
	var out []browser.Element
	for _, n := range tree.Nodes {
		axRole := axString(n.Role)
		if axRole == "Iframe" || axRole == "iframe" {
			om.add(browser.OmittedFrameLimit)
		}
		if n.Ignored || n.BackendDOMNodeID == 0 {
			continue
		}
		role, ok := contractRole(axRole)
		if !ok {
			continue
		}
		if filter == browser.FilterInteractive && axProp(n, accessibility.PropertyNameDisabled) == "true" {
			continue
		}
		label := strings.ToValidUTF8(strings.Join(strings.Fields(axString(n.Name)), " "), "\uFFFD")
		if label == "" {
			label = axProp(n, "placeholder")
		}
		if label == "" {
			label = "unnamed " + string(role)
		}
		if short, cutOff := cut(label, browser.MaxRefBytes); cutOff {
			label = short
			om.add(browser.OmittedNameLimit)
		}
		el := browser.Element{Label: label, Role: role}
		isPrivate := private[n.BackendDOMNodeID]
		switch role {
		case browser.RoleTextbox, browser.RoleSlider, browser.RoleCombobox:
			if isPrivate {
				om.add(browser.OmittedPrivate)
			} else if v := strings.ToValidUTF8(axString(n.Value), "\uFFFD"); v != "" || role == browser.RoleTextbox {
				if short, cutOff := cut(v, browser.MaxValueBytes); cutOff {
					v = short
					om.add(browser.OmittedValue)
				}
				el.Value = &v
			}
		case browser.RoleCheckbox, browser.RoleRadio:
			switch axProp(n, accessibility.PropertyNameChecked) {
			case "true":
				el.Checked = ptr(true)
			case "false":
				el.Checked = ptr(false)
			}
		}
		if role == browser.RoleCombobox || role == browser.RoleListbox {
			opts, err := selectOptions(ctx, s, n, byID)
			if err != nil {
				return nil, err
			}
			if isPrivate {
				om.add(browser.OmittedPrivate)
			} else {
				el.Options = opts
			}
		}
		el.Ref = b.refs.refFor(t, loader, n.BackendDOMNodeID, role)
		out = append(out, el)
	}
	if out == nil {
		out = []browser.Element{}
	}
	return out, nil
}

// privateNodes returns the backend ids of the page's private fields.
func privateNodes(ctx context.Context, s *chromedp.Target) (map[cdp.BackendNodeID]bool, error) {
	res, err := cdp.Call(ctx, s, runtime.Evaluate, runtime.EvaluateParams{Expression: privateFieldsJS})
	if err != nil {
		return nil, fmt.Errorf("private fields: %w", err)
	}
	if res.ExceptionDetails != nil || res.Result == nil || res.Result.ObjectID == "" {
		return nil, fmt.Errorf("private fields: the query failed")
	}
	defer releaseObject(ctx, s, res.Result.ObjectID)
	props, err := cdp.Call(ctx, s, runtime.GetProperties, runtime.GetPropertiesParams{ObjectID: res.Result.ObjectID, OwnProperties: ptr(true)})
	if err != nil {
		return nil, fmt.Errorf("private fields: %w", err)
	}
	out := map[cdp.BackendNodeID]bool{}
	for _, p := range props.Result {
		if p.Value == nil || p.Value.ObjectID == "" || p.Value.Subtype != "node" {
			continue
		}
		id, err := backendID(ctx, s, p.Value.ObjectID)
		if err != nil {
			return nil, err
		}
		out[id] = true
	}
	return out, nil
}

// selectOptions lists a combobox's or listbox's options: from the DOM for a
// <select> (values are the option values select_option takes), else from
// the accessibility children (label and value alike).
func selectOptions(ctx context.Context, s *chromedp.Target, n *accessibility.Node, byID map[accessibility.NodeID]*accessibility.Node) ([]browser.ElementOption, error) {
	obj, err := resolve(ctx, s, n.BackendDOMNodeID)
	if err != nil {
		return nil, err
	}
	defer releaseObject(ctx, s, obj)
	var dom []struct {
		Label    string `json:"label"`
		Value    string `json:"value"`
		Selected bool   `json:"selected"`
	}
	if err := callOn(ctx, s, obj, `function() {
  if (!(this instanceof HTMLSelectElement)) return null;
  return Array.from(this.options, o => ({label: o.label, value: o.value, selected: o.selected}));
}`, &dom); err != nil {
		return nil, err
	}
	var out []browser.ElementOption
	if dom != nil {
		for _, o := range dom {
			label, _ := cut(strings.ToValidUTF8(o.Label, "\uFFFD"), browser.MaxRefBytes)
			value, _ := cut(strings.ToValidUTF8(o.Value, "\uFFFD"), browser.MaxValueBytes)
			out = append(out, browser.ElementOption{Label: label, Value: value, Selected: ptr(o.Selected)})
		}
		return out, nil
	}
	var walk func(id accessibility.NodeID, depth int)
	walk = func(id accessibility.NodeID, depth int) {
		c := byID[id]
		if c == nil || depth > 4 {
			return
		}
		if axString(c.Role) == "option" || axString(c.Role) == "MenuListOption" || axString(c.Role) == "ListBoxOption" {
			label, _ := cut(strings.ToValidUTF8(axString(c.Name), "\uFFFD"), browser.MaxRefBytes)
			out = append(out, browser.ElementOption{Label: label, Value: label, Selected: ptr(axProp(c, accessibility.PropertyNameSelected) == "true")})
			return
		}
		for _, k := range c.ChildIDs {
			walk(k, depth+1)
		}
	}
	for _, k := range n.ChildIDs {
		walk(k, 0)
	}
	return out, nil
}

// readTab reads the tab tabID names (nil: the active one), reporting what
// the browser refused meanwhile.
func (b *Browser) readTab(ctx context.Context, tabID *string, filter browser.Filter, withElements bool) (browser.BrowserReadV1, error) {
	b.mu.Lock()
	defer b.mu.Unlock()
	t, err := b.tabFor(ctx, tabID)
	if err != nil {
		return browser.BrowserReadV1{}, err
	}
	r, err := b.read(ctx, t, filter, withElements)
	return r, b.report(ctx, err)
}

// ReadPage reads the page's visible text and controls.
func (b *Browser) ReadPage(ctx context.Context, args browser.ReadPageArgs) (browser.ReadResult, error) {
	r, err := b.readTab(ctx, args.TabID, args.Filter, true)
	if err != nil {
		return browser.ReadResult{}, err
	}
	return browser.StructuredRead(r), nil
}

// GetPageText reads the page's visible text.
func (b *Browser) GetPageText(ctx context.Context, args browser.GetPageTextArgs) (browser.ReadResult, error) {
	r, err := b.readTab(ctx, args.TabID, browser.FilterAll, false)
	if err != nil {
		return browser.ReadResult{}, err
	}
	return browser.StructuredRead(r), nil
}

// Find reports the controls whose label or value contains the query and
// the lines of visible text that do, case-insensitively.
func (b *Browser) Find(ctx context.Context, args browser.FindArgs) (browser.ReadResult, error) {
	r, err := b.readTab(ctx, args.TabID, browser.FilterAll, true)
	if err != nil {
		return browser.ReadResult{}, err
	}
	q := strings.ToLower(args.Query)
	var lines []string
	for _, line := range strings.Split(r.Text, "\n") {
		if strings.Contains(strings.ToLower(line), q) {
			lines = append(lines, line)
		}
	}
	found := r.Elements[:0]
	for _, e := range r.Elements {
		if strings.Contains(strings.ToLower(e.Label), q) || e.Value != nil && strings.Contains(strings.ToLower(*e.Value), q) {
			found = append(found, e)
		}
	}
	r.Text, r.Elements = strings.Join(lines, "\n"), found
	return browser.StructuredRead(r), nil
}
