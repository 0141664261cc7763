// Package testimage draws a reproducible, realistic desktop for tests and
// benchmarks of capture, scaling and encoding.
package testimage

import (
	"image"
	"image/color"
	"image/draw"
	"math"
	"math/rand/v2"
	"strings"

	"golang.org/x/image/font"
	"golang.org/x/image/font/basicfont"
	"golang.org/x/image/math/fixed"
)

// Desktop draws reproducible, realistic desktop content for encoder tests
// and benchmarks: a wallpaper gradient, a panel, a browser-like window with
// paragraphs of text and a photo-like picture, a terminal and an editor.
func Desktop(w, h int) *image.RGBA {
	img := image.NewRGBA(image.Rect(0, 0, w, h))
	for y := 0; y < h; y++ { // wallpaper: a smooth vertical gradient
		c := color.RGBA{uint8(30 + 40*y/h), uint8(60 + 50*y/h), uint8(110 + 60*y/h), 255}
		fill(img, image.Rect(0, y, w, y+1), c)
	}
	r := rand.New(rand.NewPCG(42, 1))
	fill(img, image.Rect(0, 0, w, 28), color.RGBA{40, 40, 40, 255})
	text(img, 10, 19, color.RGBA{230, 230, 230, 255}, "Activities    Firefox    Terminal    Text Editor                       Tue 14:02")

	// Browser: title bar, toolbar, white page of text, a picture.
	win := image.Rect(w/20, h/10, w*13/20, h*19/20)
	window(img, win, "Example Domain - Mozilla Firefox")
	fill(img, image.Rect(win.Min.X, win.Min.Y+30, win.Max.X, win.Min.Y+66), color.RGBA{240, 240, 244, 255})
	fill(img, image.Rect(win.Min.X+90, win.Min.Y+36, win.Max.X-60, win.Min.Y+60), color.RGBA{255, 255, 255, 255})
	text(img, win.Min.X+100, win.Min.Y+52, color.RGBA{20, 20, 20, 255}, "https://example.com/articles/computer-use?ref=agentd")
	y := win.Min.Y + 100
	text(img, win.Min.X+30, y, color.RGBA{0, 0, 0, 255}, "Computer-use agents and the desktops they drive")
	for y += 30; y < win.Max.Y-20; y += 17 {
		if y > win.Min.Y+200 && y < win.Min.Y+200+h/4 {
			continue
		}
		text(img, win.Min.X+30, y, color.RGBA{50, 50, 50, 255}, words(r, (win.Dx()-60)/7))
	}
	photo(img, image.Rect(win.Min.X+30, win.Min.Y+190, win.Min.X+30+w/4, win.Min.Y+190+h/4), r)
	fill(img, image.Rect(win.Max.X-200, win.Min.Y+200, win.Max.X-40, win.Min.Y+236), color.RGBA{0, 96, 223, 255})
	text(img, win.Max.X-170, win.Min.Y+222, color.RGBA{255, 255, 255, 255}, "Subscribe now")

	// Terminal.
	term := image.Rect(w*11/20, h/4, w*39/40, h*3/5)
	window(img, term, "user@guest: ~")
	fill(img, image.Rect(term.Min.X, term.Min.Y+30, term.Max.X, term.Max.Y), color.RGBA{18, 18, 18, 255})
	for y := term.Min.Y + 46; y < term.Max.Y-8; y += 15 {
		c := color.RGBA{200, 200, 200, 255}
		if r.IntN(3) == 0 {
			c = color.RGBA{80, 220, 100, 255}
		}
		text(img, term.Min.X+8, y, c, "$ "+words(r, (term.Dx()-20)/7-2))
	}

	// Editor with syntax colours.
	ed := image.Rect(w*12/20, h*5/8, w*39/40, h*39/40)
	window(img, ed, "main.go - Text Editor")
	fill(img, image.Rect(ed.Min.X, ed.Min.Y+30, ed.Max.X, ed.Max.Y), color.RGBA{253, 253, 250, 255})
	palette := []color.RGBA{{0, 0, 160, 255}, {160, 0, 100, 255}, {0, 120, 0, 255}, {40, 40, 40, 255}}
	for y := ed.Min.Y + 48; y < ed.Max.Y-6; y += 15 {
		text(img, ed.Min.X+8, y, color.RGBA{150, 150, 150, 255}, "  ")
		text(img, ed.Min.X+8+7*(2+2*r.IntN(3)), y, palette[r.IntN(len(palette))], words(r, (ed.Dx()-60)/7))
	}
	return img
}

func fill(img *image.RGBA, r image.Rectangle, c color.RGBA) {
	draw.Draw(img, r, image.NewUniform(c), image.Point{}, draw.Src)
}

func window(img *image.RGBA, r image.Rectangle, title string) {
	fill(img, r.Inset(-1), color.RGBA{120, 120, 120, 255})
	fill(img, image.Rect(r.Min.X, r.Min.Y, r.Max.X, r.Min.Y+30), color.RGBA{225, 225, 225, 255})
	fill(img, r, color.RGBA{255, 255, 255, 255})
	fill(img, image.Rect(r.Min.X, r.Min.Y, r.Max.X, r.Min.Y+30), color.RGBA{225, 225, 225, 255})
	text(img, r.Min.X+12, r.Min.Y+20, color.RGBA{30, 30, 30, 255}, title)
}

func text(img *image.RGBA, x, y int, c color.RGBA, s string) {
	d := font.Drawer{Dst: img, Src: image.NewUniform(c), Face: basicfont.Face7x13, Dot: fixed.P(x, y)}
	d.DrawString(s)
}

var vocabulary = strings.Fields(`the a screen agent model click window button text field
	scroll page image pixel display server capture encode frame desktop browser editor
	terminal keyboard mouse action result request token session transform crop scale`)

func words(r *rand.Rand, n int) string {
	var b strings.Builder
	for b.Len() < n-12 {
		if b.Len() > 0 {
			b.WriteByte(' ')
		}
		b.WriteString(vocabulary[r.IntN(len(vocabulary))])
	}
	return b.String()
}

// photo is a smooth two-dimensional colour field with sensor-like noise and
// a few soft shapes: the hardest content for a lossless encoder.
func photo(img *image.RGBA, rect image.Rectangle, r *rand.Rand) {
	for y := rect.Min.Y; y < rect.Max.Y; y++ {
		for x := rect.Min.X; x < rect.Max.X; x++ {
			fx, fy := float64(x-rect.Min.X)/float64(rect.Dx()), float64(y-rect.Min.Y)/float64(rect.Dy())
			v := math.Sin(fx*7)*math.Cos(fy*5)*40 + 128
			n := float64(r.IntN(9) - 4)
			img.SetRGBA(x, y, color.RGBA{
				uint8(clampF(v + 60*fx + n)), uint8(clampF(v*0.8 + 40*fy + n)), uint8(clampF(200 - v*0.5 + n)), 255,
			})
		}
	}
}

func clampF(v float64) float64 { return math.Max(0, math.Min(255, v)) }
