package vm

import (
	"bytes"
	"strings"
	"testing"

	"gopkg.in/yaml.v3"
)

// limaYAMLDoc is the Lima configuration as the template writes it. Decoding
// with KnownFields makes any field the test does not know about an error,
// so nothing in the template goes unchecked.
type limaYAMLDoc struct {
	VMType string `yaml:"vmType"`
	Arch   string `yaml:"arch"`
	CPUs   int    `yaml:"cpus"`
	Memory string `yaml:"memory"`
	Disk   string `yaml:"disk"`
	Images []struct {
		Location string `yaml:"location"`
		Arch     string `yaml:"arch"`
	} `yaml:"images"`
	Mounts     *[]map[string]any `yaml:"mounts"`
	Containerd struct {
		System *bool `yaml:"system"`
		User   *bool `yaml:"user"`
	} `yaml:"containerd"`
	SSH struct {
		LoadDotSSHPubKeys *bool `yaml:"loadDotSSHPubKeys"`
		ForwardAgent      *bool `yaml:"forwardAgent"`
		ForwardX11        *bool `yaml:"forwardX11"`
	} `yaml:"ssh"`
	Video struct {
		Display string `yaml:"display"`
	} `yaml:"video"`
	PortForwards []struct {
		GuestIP           string `yaml:"guestIP"`
		GuestIPMustBeZero *bool  `yaml:"guestIPMustBeZero"`
		GuestPort         int    `yaml:"guestPort"`
		HostIP            string `yaml:"hostIP"`
		HostPort          int    `yaml:"hostPort"`
		Proto             string `yaml:"proto"`
		Ignore            bool   `yaml:"ignore"`
	} `yaml:"portForwards"`
}

func parseLima(t *testing.T, b []byte) limaYAMLDoc {
	t.Helper()
	dec := yaml.NewDecoder(bytes.NewReader(b))
	dec.KnownFields(true)
	var doc limaYAMLDoc
	if err := dec.Decode(&doc); err != nil {
		t.Fatalf("the rendered template is not the expected YAML: %v\n%s", err, b)
	}
	return doc
}

func TestTemplate(t *testing.T) {
	for _, tc := range []struct {
		name, vmType, arch, image string
	}{
		{"Apple silicon", "vz", "aarch64", "https://cloud.debian.org/images/cloud/bookworm/latest/debian-12-genericcloud-arm64.qcow2"},
		{"Linux x86-64", "qemu", "x86_64", "https://cloud.debian.org/images/cloud/bookworm/latest/debian-12-genericcloud-amd64.qcow2"},
	} {
		t.Run(tc.name, func(t *testing.T) {
			cfg, err := Config{VMType: tc.vmType, Arch: tc.arch}.withDefaults()
			if err != nil {
				t.Fatal(err)
			}
			b, err := renderTemplate(cfg, 41234)
			if err != nil {
				t.Fatal(err)
			}
			doc := parseLima(t, b)
			if doc.VMType != tc.vmType || doc.Arch != tc.arch {
				t.Errorf("vmType %q arch %q, want %q %q", doc.VMType, doc.Arch, tc.vmType, tc.arch)
			}
			if len(doc.Images) != 1 || doc.Images[0].Location != tc.image || doc.Images[0].Arch != tc.arch {
				t.Errorf("images %+v, want Debian 12 for %s", doc.Images, tc.arch)
			}
			if doc.CPUs != DefaultCPUs || doc.Memory != DefaultMemory || doc.Disk != DefaultDisk {
				t.Errorf("cpus %d memory %q disk %q", doc.CPUs, doc.Memory, doc.Disk)
			}
			// An explicit empty list: Lima's default would mount the home directory.
			if doc.Mounts == nil || len(*doc.Mounts) != 0 {
				t.Errorf("mounts %v, want an explicit empty list", doc.Mounts)
			}
			for name, v := range map[string]*bool{
				"containerd.system": doc.Containerd.System, "containerd.user": doc.Containerd.User,
				"ssh.loadDotSSHPubKeys": doc.SSH.LoadDotSSHPubKeys, "ssh.forwardAgent": doc.SSH.ForwardAgent,
				"ssh.forwardX11": doc.SSH.ForwardX11,
			} {
				if v == nil || *v {
					t.Errorf("%s is %v, want false", name, v)
				}
			}
			if doc.Video.Display != "none" {
				t.Errorf("video.display %q", doc.Video.Display)
			}
			if len(doc.PortForwards) != 2 {
				t.Fatalf("portForwards %+v: want agentd's and an ignore-everything rule", doc.PortForwards)
			}
			fw, rest := doc.PortForwards[0], doc.PortForwards[1]
			if fw.GuestIP != "127.0.0.1" || fw.GuestPort != 7010 || fw.HostIP != "127.0.0.1" || fw.HostPort != 41234 || fw.Ignore {
				t.Errorf("agentd's forward %+v, want guest 127.0.0.1:7010 → host 127.0.0.1:41234", fw)
			}
			if rest.GuestIP != "0.0.0.0" || rest.GuestIPMustBeZero == nil || *rest.GuestIPMustBeZero || rest.Proto != "any" || !rest.Ignore || rest.GuestPort != 0 {
				t.Errorf("last rule %+v, want every other port of every guest address ignored", rest)
			}
		})
	}
}

func TestTemplateQuotesValues(t *testing.T) {
	cfg, err := Config{Arch: "aarch64", Image: "file:///Users/me/images/debian: 12 #1.qcow2"}.withDefaults()
	if err != nil {
		t.Fatal(err)
	}
	b, err := renderTemplate(cfg, 1)
	if err != nil {
		t.Fatal(err)
	}
	if doc := parseLima(t, b); doc.Images[0].Location != cfg.Image {
		t.Errorf("location %q, want %q", doc.Images[0].Location, cfg.Image)
	}
	if !strings.Contains(string(b), "# Nothing of the host is shared") {
		t.Error("the comments of the template are not rendered")
	}
}
