package browser

import (
	"context"
	"sync"

	"github.com/agentd-dev/agentd/actions/browser"
)

// pageDriver is a driver of one page offering read_page, click,
// screenshot and set_checked; it logs what the toolset asked of it.
type pageDriver struct {
	mu  sync.Mutex
	log []string
}

func (d *pageDriver) record(entry string) {
	d.mu.Lock()
	d.log = append(d.log, entry)
	d.mu.Unlock()
}

func (d *pageDriver) entries() []string {
	d.mu.Lock()
	defer d.mu.Unlock()
	return append([]string(nil), d.log...)
}

func (d *pageDriver) State(context.Context) (browser.State, error) {
	d.record("state")
	return browser.State{Version: browser.StateV1, Tabs: []browser.Tab{
		{ID: "t1", Title: "Pickup form", URL: "https://example.com/form?id=7#top", Active: true},
	}}, nil
}

func (d *pageDriver) ReadPage(context.Context, browser.ReadPageArgs) (browser.ReadResult, error) {
	d.record("read_page")
	return browser.StructuredRead(browser.BrowserReadV1{Version: 1, Text: "Pickup", Elements: []browser.Element{
		{Ref: "e1", Label: "Submit", Role: browser.RoleButton},
	}}), nil
}

func (d *pageDriver) Click(context.Context, browser.ClickArgs) (*string, error) {
	d.record("click")
	return nil, nil
}

func (d *pageDriver) SetChecked(context.Context, browser.SetCheckedArgs) (*string, error) {
	d.record("set_checked")
	return nil, nil
}

func (d *pageDriver) Screenshot(context.Context, browser.ScreenshotArgs) (browser.Image, error) {
	d.record("screenshot")
	detail := browser.DetailOriginal
	return browser.Image{ImageURL: browser.Text("data:image/png;base64,iVBORw0KGgo="), Detail: &detail}, nil
}

// confirmer approves every request, logged as "confirm".
func (d *pageDriver) confirmer(context.Context, browser.ConsentRequest) (any, error) {
	d.record("confirm")
	return true, nil
}
