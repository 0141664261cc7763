package desktop

import (
	"encoding/json"
	"strings"
	"testing"

	"github.com/agentd-dev/agentd/tools/exercise/form"
)

// TestCheckPage checks the report of a page laid out by the form's own
// constants, and one pushed down by a bar.
func TestCheckPage(t *testing.T) {
	var rep form.PageReport
	if err := json.Unmarshal([]byte(form.LayoutReport), &rep); err != nil {
		t.Fatal(err)
	}
	if err := CheckPage(rep); err != nil {
		t.Fatalf("CheckPage of the layout itself: %v", err)
	}
	rep.Viewport.Y = 37 // a toolbar or notification bar pushed the page down
	if err := CheckPage(rep); err == nil || !strings.Contains(err.Error(), "viewport") {
		t.Fatalf("CheckPage of a shifted page: %v", err)
	}
}
