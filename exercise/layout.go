package exercise

// The exercise desktop's geometry, in screen pixels unless said otherwise.
// The form page is laid out from these constants (absolute CSS), the window
// manager places the windows by them, and Up checks what the browser
// reports against them, so a scripted model can click these points blind.
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

// Boxes of the form's controls in page pixels: left, top, width, height.
const (
	nameLeft, nameTop, nameWidth, nameHeight = 40, 140, 560, 64
	dateLeft, dateTop, dateWidth, dateHeight = 40, 266, 320, 64

	// The slot select is a list box (size=3): every option is visible at a
	// fixed place, so one click chooses, with no drop-down to open.
	slotLeft, slotTop, slotWidth = 40, 392, 320
	slotBorder                   = 2
	optionHeight                 = 56
	slotHeight                   = 3*optionHeight + 2*slotBorder

	fragileLeft, fragileTop, fragileSize = 40, 600, 40

	submitLeft, submitTop, submitWidth, submitHeight = 40, 700, 260, 76

	// The "New request" link of the saved and error pages.
	againLeft, againTop, againWidth, againHeight = 40, 560, 320, 64
)

// Click targets: the centre of each control, in screen pixels.
const (
	NameFieldX = BrowserX + nameLeft + nameWidth/2
	NameFieldY = BrowserY + nameTop + nameHeight/2

	DateFieldX = BrowserX + dateLeft + dateWidth/2
	DateFieldY = BrowserY + dateTop + dateHeight/2

	SlotOptionX    = BrowserX + slotLeft + slotWidth/2
	SlotMorningY   = BrowserY + slotTop + slotBorder + optionHeight/2
	SlotAfternoonY = SlotMorningY + optionHeight
	SlotEveningY   = SlotAfternoonY + optionHeight

	FragileX = BrowserX + fragileLeft + fragileSize/2
	FragileY = BrowserY + fragileTop + fragileSize/2

	SubmitX = BrowserX + submitLeft + submitWidth/2
	SubmitY = BrowserY + submitTop + submitHeight/2

	// NewRequestX/Y is the "New request" link on the page shown after a
	// submission; it opens an empty form again.
	NewRequestX = BrowserX + againLeft + againWidth/2
	NewRequestY = BrowserY + againTop + againHeight/2

	// EditorTextX/Y is inside the editor's text area, below the menu bar
	// and the warning bar mousepad shows when run as root.
	EditorTextX = EditorX + EditorWidth/2
	EditorTextY = EditorY + EditorHeight/2
)

// slots are the options of the pickup slot, in their order on the page.
var slots = [...]string{"Morning", "Afternoon", "Evening"}
