package bench

import (
	"fmt"
	"io"
	"strings"
	"text/tabwriter"
)

// WriteTable writes r as tables for people.
func (r *Report) WriteTable(w io.Writer) error {
	m := r.Machine
	var b strings.Builder
	fmt.Fprintf(&b, "agentctl bench: %d CPUs", m.CPUs)
	if m.CPUModel != "" {
		fmt.Fprintf(&b, " (%s)", m.CPUModel)
	}
	if m.MemTotalMiB > 0 {
		fmt.Fprintf(&b, ", %.1f GiB", float64(m.MemTotalMiB)/1024)
	}
	if m.Kernel != "" {
		fmt.Fprintf(&b, ", Linux %s", m.Kernel)
	}
	fmt.Fprintf(&b, ", %s\nload average %.2f at the start, %.2f at the end; %s per figure; medians (p50) and p99\n",
		m.Go, m.LoadStart[0], m.LoadEnd[0], r.Duration)
	b.WriteString("vs: how many times faster than the peer, medians of the same run\n")
	if _, err := io.WriteString(w, b.String()); err != nil {
		return fmt.Errorf("write table: %w", err)
	}

	tw := tabwriter.NewWriter(w, 0, 0, 2, ' ', 0)
	for _, s := range r.Sizes {
		section(tw, "Screenshots, "+s.Size+" screen", figureColumns)
		figures(tw, s.Screenshot)
		section(tw, "Settling, "+s.Size, figureColumns)
		figures(tw, s.Settle)
		section(tw, "Bytes and tokens per screenshot, "+s.Size, "image\tPNG\tbase64\test. tokens")
		for _, c := range s.Images {
			fmt.Fprintf(tw, "  %s\t%dx%d\t%s\t%s\t%d\t\n", c.View, c.Width, c.Height, kb(c.PNGBytes), kb(c.Base64Bytes), c.Tokens)
		}
		mem := s.Memory
		section(tw, fmt.Sprintf("agentd memory, %s, over %d screenshots (%s)", s.Size, mem.Screenshots, mem.View), "")
		fmt.Fprintf(tw, "  resident set\t%.1f → %.1f MiB (peak %.1f MiB)\t\n",
			float64(mem.RSSBeforeKiB)/1024, float64(mem.RSSAfterKiB)/1024, float64(mem.HWMKiB)/1024)
		fmt.Fprintf(tw, "  per screenshot\t%.1f ms CPU, %.1f minor page faults\t\n", mem.CPUMSPerShot, mem.MinorFaultsPerShot)
		fmt.Fprintf(tw, "  capture+scale+encode allocations\t%s in %.0f allocations per screenshot (probe process)\t\n",
			kb(int(mem.PipelineAllocBytes)), mem.PipelineAllocs)
	}
	section(tw, "Input, "+r.InputSize+" screen", figureColumns)
	figures(tw, r.Input)
	if len(r.Browser) > 0 {
		section(tw, "Browser toolset (Chromium, agentd --browser), "+r.InputSize+" screen", figureColumns)
		figures(tw, r.Browser)
	}
	fmt.Fprintln(tw)
	fmt.Fprintln(tw, "est. tokens:\t"+r.Formulas["est_input_tokens"])
	fmt.Fprintln(tw, "bytes:\t"+r.Formulas["bytes"])
	if err := tw.Flush(); err != nil {
		return fmt.Errorf("write table: %w", err)
	}
	return nil
}

// figureColumns head the columns of figures.
const figureColumns = "n\tp50\tp99\tvs"

// section starts a block of aligned rows; the empty line ends the last one.
func section(tw *tabwriter.Writer, title, columns string) {
	fmt.Fprintf(tw, "\n%s\t%s\t\n", title, columns)
}

func figures(tw *tabwriter.Writer, fs []Figure) {
	for _, f := range fs {
		name := "  " + f.Name
		if f.Peer {
			name = "  peer: " + f.Name
		}
		if f.Missing != "" {
			fmt.Fprintf(tw, "%s\t-\t-\t-\t%s\t\n", name, f.Missing)
			continue
		}
		var vs []string
		for _, r := range f.Vs {
			vs = append(vs, fmt.Sprintf("%s ×%s", r.Peer, times(r.Times)))
		}
		note := strings.Join(vs, ", ")
		if f.Note != "" {
			note = strings.TrimPrefix(note+"; "+f.Note, "; ")
		}
		fmt.Fprintf(tw, "%s\t%d\t%s\t%s\t%s\t\n", name, f.N, value(f.P50, f.Unit), value(f.P99, f.Unit), note)
	}
}

func value(v float64, unit string) string {
	switch {
	case unit != UnitMS:
		return fmt.Sprintf("%.0f %s", v, unit)
	case v < 10:
		return fmt.Sprintf("%.2f ms", v)
	case v < 100:
		return fmt.Sprintf("%.1f ms", v)
	}
	return fmt.Sprintf("%.0f ms", v)
}

func times(t float64) string {
	if t < 10 {
		return fmt.Sprintf("%.1f", t)
	}
	return fmt.Sprintf("%.0f", t)
}

func kb(n int) string { return fmt.Sprintf("%.1f KB", float64(n)/1000) }
