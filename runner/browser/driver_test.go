package browser

import (
	"context"

	"github.com/agentd-dev/agentd/actions/browser"
	"github.com/agentd-dev/agentd/internal/calllog"
)

// pageDriver is a driver of one page offering read_page, click,
// screenshot and set_checked; it logs what the toolset asked of it.
type pageDriver struct {
	log calllog.Log
}

func (d *pageDriver) State(context.Context) (browser.State, error) {
	d.log.Add("state")
	return browser.State{Version: browser.StateV1, Tabs: []browser.Tab{
		{ID: "t1", Title: "Pickup form", URL: "https://example.com/form?id=7#top", Active: true},
	}}, nil
}

func (d *pageDriver) ReadPage(context.Context, browser.ReadPageArgs) (browser.ReadResult, error) {
	d.log.Add("read_page")
	return browser.StructuredRead(browser.BrowserReadV1{Version: 1, Text: "Pickup", Elements: []browser.Element{
		{Ref: "e1", Label: "Submit", Role: browser.RoleButton},
	}}), nil
}

func (d *pageDriver) Click(context.Context, browser.ClickArgs) (*string, error) {
	d.log.Add("click")
	return nil, nil
}

func (d *pageDriver) SetChecked(context.Context, browser.SetCheckedArgs) (*string, error) {
	d.log.Add("set_checked")
	return nil, nil
}

func (d *pageDriver) Screenshot(context.Context, browser.ScreenshotArgs) (browser.Image, error) {
	d.log.Add("screenshot")
	detail := browser.DetailOriginal
	return browser.Image{ImageURL: browser.Text("data:image/png;base64,iVBORw0KGgo="), Detail: &detail}, nil
}

// confirmer approves every request, logged as "confirm".
func (d *pageDriver) confirmer(context.Context, browser.ConsentRequest) (any, error) {
	d.log.Add("confirm")
	return true, nil
}
