package backend

import "flag"

// FlagSetter is a backend with settings of its own beyond a Spec (which
// cluster and namespace, which image), given as flags of the commands that
// start or find its guests: the backend keeps them, as agentctl runs one
// command a process.
type FlagSetter interface {
	RegisterFlags(fs *flag.FlagSet)
}

// RegisterFlags adds the registered backends' own flags to fs.
func RegisterFlags(fs *flag.FlagSet) {
	for _, name := range Names() {
		b, _ := Get(name)
		if f, ok := b.(FlagSetter); ok {
			f.RegisterFlags(fs)
		}
	}
}
