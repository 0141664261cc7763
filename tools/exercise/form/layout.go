package form

// The form page's geometry in page pixels: every control is placed
// absolutely from these (layoutCSS), so that the exercise desktop
// (exercise/desktop) can turn them into screen pixels for a model that
// clicks blind.

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

// Click targets: the centre of each control, in page pixels.
const (
	NameX = nameLeft + nameWidth/2
	NameY = nameTop + nameHeight/2

	DateX = dateLeft + dateWidth/2
	DateY = dateTop + dateHeight/2

	SlotX          = slotLeft + slotWidth/2
	SlotMorningY   = slotTop + slotBorder + optionHeight/2
	SlotAfternoonY = SlotMorningY + optionHeight
	SlotEveningY   = SlotAfternoonY + optionHeight

	FragileX = fragileLeft + fragileSize/2
	FragileY = fragileTop + fragileSize/2

	SubmitX = submitLeft + submitWidth/2
	SubmitY = submitTop + submitHeight/2

	// The "New request" link on the page shown after a submission.
	NewRequestX = againLeft + againWidth/2
	NewRequestY = againTop + againHeight/2
)

// slots are the options of the pickup slot, in their order on the page.
var slots = [...]string{"Morning", "Afternoon", "Evening"}

// LayoutReport is the report a page laid out exactly by these constants
// sends (/loaded), in a 900×900 browser window at the screen's corner: for
// tests of the report's checks.
const LayoutReport = `{"viewport":{"x":0,"y":0,"w":900,"h":900},"pixel_ratio":1,"controls":{
	"name":{"x":40,"y":140,"w":560,"h":64},"date":{"x":40,"y":266,"w":320,"h":64},
	"slot:Morning":{"x":42,"y":394,"w":316,"h":56},"slot:Afternoon":{"x":42,"y":450,"w":316,"h":56},
	"slot:Evening":{"x":42,"y":506,"w":316,"h":56},"fragile":{"x":40,"y":600,"w":40,"h":40},
	"submit":{"x":40,"y":700,"w":260,"h":76}}}`
