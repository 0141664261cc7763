package vm

import (
	"bytes"
	_ "embed"
	"fmt"
	"text/template"
)

//go:embed lima.yaml.tmpl
var limaTemplate string

var limaTmpl = template.Must(template.New("lima.yaml").Option("missingkey=error").Parse(limaTemplate))

// templateData fills lima.yaml.tmpl.
type templateData struct {
	VMType, Arch, Image, Memory, Disk string
	CPUs, GuestPort, HostPort         int
}

// renderTemplate is the Lima configuration of the VM for cfg (with its
// defaults applied) whose agentd is forwarded to hostPort.
func renderTemplate(cfg Config, hostPort int) ([]byte, error) {
	var buf bytes.Buffer
	err := limaTmpl.Execute(&buf, templateData{
		VMType:    cfg.VMType,
		Arch:      cfg.Arch,
		Image:     cfg.Image,
		Memory:    cfg.Memory,
		Disk:      cfg.Disk,
		CPUs:      cfg.CPUs,
		GuestPort: guestPort,
		HostPort:  hostPort,
	})
	if err != nil {
		return nil, fmt.Errorf("render the Lima template: %w", err)
	}
	return buf.Bytes(), nil
}
