package form

import (
	"bytes"
	"html/template"
	"net/http"
	"strings"
	textTemplate "text/template"
)

// layoutCSS places every control absolutely, from the constants in
// layout.go, with large fonts: a click near a constant always lands.
const layoutCSS = `
html, body { margin: 0; padding: 0; background: #fff; color: #111; overflow: hidden; }
body { font: 26px/1.2 "DejaVu Sans", sans-serif; }
h1 { position: absolute; left: 40px; top: 24px; margin: 0; font-size: 40px; }
.label { position: absolute; left: 40px; margin: 0; font-size: 26px; }
input[type=text], select, button { position: absolute; box-sizing: border-box; margin: 0;
  font: 30px "DejaVu Sans", sans-serif; border: 2px solid #555; border-radius: 0; }
input[type=text] { padding: 0 12px; }
#name { left: {{.Name.L}}px; top: {{.Name.T}}px; width: {{.Name.W}}px; height: {{.Name.H}}px; }
#date { left: {{.Date.L}}px; top: {{.Date.T}}px; width: {{.Date.W}}px; height: {{.Date.H}}px; }
#slot { left: {{.Slot.L}}px; top: {{.Slot.T}}px; width: {{.Slot.W}}px; height: {{.Slot.H}}px;
  border-width: {{.SlotBorder}}px; padding: 0; overflow: hidden; }
#slot option { box-sizing: border-box; height: {{.OptionHeight}}px; line-height: {{.OptionLineHeight}}px;
  padding: {{.OptionPadding}}px 14px; margin: 0; }
#fragile { position: absolute; left: {{.Fragile.L}}px; top: {{.Fragile.T}}px; width: {{.Fragile.W}}px; height: {{.Fragile.H}}px; margin: 0; }
.check { position: absolute; left: {{.FragileLabelLeft}}px; top: {{.Fragile.T}}px; line-height: {{.Fragile.H}}px; font-size: 30px; }
#submit { left: {{.Submit.L}}px; top: {{.Submit.T}}px; width: {{.Submit.W}}px; height: {{.Submit.H}}px; background: #e6e6e6; }
#again { position: absolute; box-sizing: border-box; left: {{.Again.L}}px; top: {{.Again.T}}px; width: {{.Again.W}}px;
  height: {{.Again.H}}px; line-height: {{.Again.H}}px; font-size: 30px; text-align: center; border: 2px solid #555; color: #003c9e; }
.result { position: absolute; left: 40px; top: 110px; margin: 0; font-size: 28px; line-height: 44px; }
`

// box is a control's rectangle in page pixels, for the page's CSS.
type box struct{ L, T, W, H int }

// layoutData feeds layoutCSS.
var layoutData = struct {
	Name, Date, Slot, Fragile, Submit, Again                                    box
	SlotBorder, OptionHeight, OptionLineHeight, OptionPadding, FragileLabelLeft int
}{
	Name:             box{nameLeft, nameTop, nameWidth, nameHeight},
	Date:             box{dateLeft, dateTop, dateWidth, dateHeight},
	Slot:             box{slotLeft, slotTop, slotWidth, slotHeight},
	Fragile:          box{fragileLeft, fragileTop, fragileSize, fragileSize},
	Submit:           box{submitLeft, submitTop, submitWidth, submitHeight},
	Again:            box{againLeft, againTop, againWidth, againHeight},
	SlotBorder:       slotBorder,
	OptionHeight:     optionHeight,
	OptionLineHeight: 36, // the 30px font's line; the rest is padding
	OptionPadding:    (optionHeight - 36) / 2,
	FragileLabelLeft: fragileLeft + fragileSize + 16,
}

// The date is a text field with a YYYY-MM-DD placeholder, not
// type=date: Firefox's date input is three locale-ordered segments with
// their own caret rules and a calendar popup, so what typing "2025-03-14"
// yields depends on the locale; a text field keeps exactly what was typed,
// and the server checks that it is a real date.
//
// The pages share a head. The form page reports its geometry once painted
// (two animation frames after load) so the desktop can check it against
// layout.go before anyone clicks.
const pagesHTML = `
{{define "head"}}<!doctype html>
<html lang="en"><head><meta charset="utf-8"><title>{{.}}</title>
<link rel="icon" href="data:,">
<style>{{css}}</style></head>
{{end}}

{{define "form"}}{{template "head" "Pickup request"}}<body>
<h1>Pickup request</h1>
<form method="post" action="/submit" accept-charset="utf-8" autocomplete="off">
<label class="label" for="name" style="top: {{labelTop .Name}}px">Name</label>
<input id="name" name="name" type="text" required maxlength="100" autocomplete="off" spellcheck="false">
<label class="label" for="date" style="top: {{labelTop .Date}}px">Date (YYYY-MM-DD)</label>
<input id="date" name="date" type="text" required placeholder="YYYY-MM-DD" pattern="[0-9]{4}-[0-9]{2}-[0-9]{2}"
  maxlength="10" inputmode="numeric" autocomplete="off" spellcheck="false">
<label class="label" for="slot" style="top: {{labelTop .Slot}}px">Pickup slot</label>
<select id="slot" name="slot" size="3" required>{{range slots}}<option value="{{.}}">{{.}}</option>{{end}}</select>
<input id="fragile" name="fragile" type="checkbox" value="yes"><label class="check" for="fragile">Fragile</label>
<button id="submit" type="submit">Submit</button>
</form>
<script>
"use strict";
function rect(el) { const r = el.getBoundingClientRect(); return {x: r.x, y: r.y, w: r.width, h: r.height}; }
addEventListener("load", () => requestAnimationFrame(() => requestAnimationFrame(() => {
  const controls = {};
  for (const id of ["name", "date", "slot", "fragile", "submit"]) controls[id] = rect(document.getElementById(id));
  for (const o of document.querySelectorAll("#slot option")) controls["slot:" + o.value] = rect(o);
  fetch("/loaded", {method: "POST", headers: {"Content-Type": "application/json"}, body: JSON.stringify({
    viewport: {x: window.mozInnerScreenX, y: window.mozInnerScreenY, w: innerWidth, h: innerHeight},
    pixel_ratio: devicePixelRatio, controls})});
})));
</script>
</body></html>
{{end}}

{{define "saved"}}{{template "head" "Saved"}}<body>
<h1>Saved</h1>
{{if .}}<div class="result">Name: {{.Name}}<br>Date: {{.Date}}<br>Pickup slot: {{.Slot}}<br>Fragile: {{if .Fragile}}yes{{else}}no{{end}}</div>{{end}}
<a id="again" href="/">New request</a>
</body></html>
{{end}}

{{define "error"}}{{template "head" "Not saved"}}<body>
<h1>Not saved</h1>
<div class="result">{{.}}</div>
<a id="again" href="/">New request</a>
</body></html>
{{end}}
`

// pageCSS is layoutCSS with the numbers filled in.
var pageCSS = func() template.CSS {
	var b strings.Builder
	if err := textTemplate.Must(textTemplate.New("css").Parse(layoutCSS)).Execute(&b, layoutData); err != nil {
		panic(err) // the template and its data are constants
	}
	return template.CSS(b.String())
}()

var pages = template.Must(template.New("pages").Funcs(template.FuncMap{
	"css":      func() template.CSS { return pageCSS },
	"slots":    func() []string { return slots[:] },
	"labelTop": func(b box) int { return b.T - 40 },
}).Parse(pagesHTML))

// The page templates.
const (
	formPage  = "form"
	savedPage = "saved"
	errorPage = "error"
)

// renderPage writes one page. Nothing on it may load from elsewhere: the
// Content-Security-Policy allows only the inline style and script and
// requests to this server.
func renderPage(w http.ResponseWriter, status int, name string, data any) {
	var buf bytes.Buffer
	if err := pages.ExecuteTemplate(&buf, name, data); err != nil {
		http.Error(w, "page: "+err.Error(), http.StatusInternalServerError)
		return
	}
	h := w.Header()
	h.Set("Content-Type", "text/html; charset=utf-8")
	h.Set("Cache-Control", "no-store")
	h.Set("Content-Security-Policy", "default-src 'none'; style-src 'unsafe-inline'; script-src 'unsafe-inline'; "+
		"connect-src 'self'; form-action 'self'; img-src data:; frame-ancestors 'none'")
	h.Set("X-Content-Type-Options", "nosniff")
	w.WriteHeader(status)
	_, _ = w.Write(buf.Bytes())
}
