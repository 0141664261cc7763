package desktop

import "github.com/agentd-dev/agentd/tools/exercise/form"

// The exercise desktop's geometry, in screen pixels. The window manager
// places the windows by these constants, the form page (exercise/form) is
// laid out in page pixels from its own, and Up checks what the browser
// reports against both, so a scripted model can click these points blind.
//
//	┌──────────── browser 900×900 ────────────┬── editor 540×900 ──┐
//	│ Pickup request                          │ File Edit Search … │
//	│ Name      [______________________]      │ (root warning bar) │
//	│ Date      [YYYY-MM-DD__]                │                    │
//	│ Pickup slot ┌Morning───┐                │   note.txt         │
//	│             │Afternoon │                │                    │
//	│             └Evening───┘                │                    │
//	│ [x] Fragile                             │                    │
//	│ [ Submit ]                              │                    │
//	└─────────────────────────────────────────┴────────────────────┘
//
// The browser shows no toolbars, so page pixel (x, y) is screen pixel
// (BrowserX+x, BrowserY+y); the page is rendered at 1 device pixel per CSS
// pixel.
const (
	ScreenWidth  = 1440
	ScreenHeight = 900

	BrowserX      = 0
	BrowserY      = 0
	BrowserWidth  = 900
	BrowserHeight = 900

	EditorX      = 900
	EditorY      = 0
	EditorWidth  = 540
	EditorHeight = 900
)

// Click targets: the centre of each control, in screen pixels.
const (
	NameFieldX = BrowserX + form.NameX
	NameFieldY = BrowserY + form.NameY

	DateFieldX = BrowserX + form.DateX
	DateFieldY = BrowserY + form.DateY

	SlotOptionX    = BrowserX + form.SlotX
	SlotMorningY   = BrowserY + form.SlotMorningY
	SlotAfternoonY = BrowserY + form.SlotAfternoonY
	SlotEveningY   = BrowserY + form.SlotEveningY

	FragileX = BrowserX + form.FragileX
	FragileY = BrowserY + form.FragileY

	SubmitX = BrowserX + form.SubmitX
	SubmitY = BrowserY + form.SubmitY

	// NewRequestX/Y is the "New request" link on the page shown after a
	// submission; it opens an empty form again.
	NewRequestX = BrowserX + form.NewRequestX
	NewRequestY = BrowserY + form.NewRequestY

	// EditorTextX/Y is inside the editor's text area, below the menu bar
	// and the warning bar mousepad shows when run as root.
	EditorTextX = EditorX + EditorWidth/2
	EditorTextY = EditorY + EditorHeight/2
)
