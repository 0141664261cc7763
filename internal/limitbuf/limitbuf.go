// Package limitbuf is a buffer for output read from a guest (a file, a
// command's output) that refuses to grow past a bound, so a huge or endless
// output ends in an error instead of filling the host's memory.
package limitbuf

import (
	"bytes"
	"fmt"
)

// Buffer is a bytes.Buffer whose writes fail past Max bytes.
type Buffer struct {
	bytes.Buffer
	Max int
}

func (b *Buffer) Write(p []byte) (int, error) {
	if b.Len()+len(p) > b.Max {
		return 0, fmt.Errorf("output is larger than %d bytes", b.Max)
	}
	return b.Buffer.Write(p)
}
