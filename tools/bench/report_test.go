package bench

import (
	"bytes"
	"encoding/json"
	"reflect"
	"strings"
	"testing"
)

func sampleReport() *Report {
	ours := Figure{ID: idShotNative, Name: "end to end, native 1440x900", Unit: UnitMS, N: 120, P50: 12.5, P99: 30}
	scrot := Figure{ID: idScrot, Name: "scrot + file read", Unit: UnitMS, N: 12, P50: 150, P99: 200, Peer: true}
	imp := Figure{ID: idImport, Name: "ImageMagick import", Unit: UnitMS, Peer: true, Missing: "missing (apt-get install imagemagick)"}
	ours.compare(scrot, imp)
	typ := Figure{ID: idType, Name: "typing", Unit: UnitCharsPerSec, N: 5, P50: 900, P99: 400, Note: "5 of 5 runs exact"}
	return &Report{
		Machine:   Machine{CPUs: 2, CPUModel: "Test CPU", Go: "go1.26", LoadStart: [3]float64{1.5}},
		Duration:  "2s",
		InputSize: "1440x900",
		Input:     []Figure{typ},
		Formulas:  map[string]string{"est_input_tokens": TokensFormula, "bytes": BytesFormula},
		Sizes: []SizeReport{{
			Size:       "1440x900",
			Screenshot: []Figure{ours, scrot, imp},
			Images:     []ImageCost{imageCost("native", 1440, 900, 222_100)},
			Memory:     Memory{Screenshots: 100, View: fitViewString, RSSBeforeKiB: 30_000, RSSAfterKiB: 30_100, HWMKiB: 31_000, CPUMSPerShot: 14},
		}},
	}
}

func TestWriteTable(t *testing.T) {
	var out bytes.Buffer
	if err := sampleReport().WriteTable(&out); err != nil {
		t.Fatal(err)
	}
	got := out.String()
	for _, want := range []string{
		"2 CPUs (Test CPU)",
		"load average 1.50 at the start",
		"Screenshots, 1440x900 screen",
		"end to end, native 1440x900",
		"12.5 ms", "30.0 ms",
		"scrot ×12", // 150 / 12.5
		"peer: scrot + file read",
		"peer: ImageMagick import",
		"missing (apt-get install imagemagick)",
		"222.1 KB", "1305",
		"29.3 → 29.4 MiB",
		"Input, 1440x900 screen",
		"900 chars/s", "400 chars/s", "5 of 5 runs exact",
		"ceil(width/32)",
	} {
		if !strings.Contains(got, want) {
			t.Errorf("table lacks %q:\n%s", want, got)
		}
	}
}

func TestWriteJSONHasTheSameFigures(t *testing.T) {
	rep := sampleReport()
	var out bytes.Buffer
	if err := rep.WriteJSON(&out); err != nil {
		t.Fatal(err)
	}
	var back Report
	if err := json.Unmarshal(out.Bytes(), &back); err != nil {
		t.Fatalf("not JSON: %v\n%s", err, out.String())
	}
	if !reflect.DeepEqual(back.Figures(), rep.Figures()) || !reflect.DeepEqual(back.Sizes[0].Images, rep.Sizes[0].Images) ||
		back.Sizes[0].Memory != rep.Sizes[0].Memory {
		t.Errorf("the JSON does not carry the report's figures:\n%s", out.String())
	}
	for _, key := range []string{`"p50": 12.5`, `"vs": [`, `"times": 12`, `"missing": "missing (apt-get install imagemagick)"`, `"est_input_tokens": 1305`, `"unit": "chars/s"`} {
		if !strings.Contains(out.String(), key) {
			t.Errorf("JSON lacks %s", key)
		}
	}
}
