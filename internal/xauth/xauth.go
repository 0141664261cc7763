// Package xauth writes and reads Xauthority files, which hold the
// MIT-MAGIC-COOKIE-1 a guest's display accepts. It links no X library: the
// local backend (host side) writes the file, the guest's own X clients
// (agentd x-wait, the bench's desktop) read it.
//
// An entry is a family, then address, display number, protocol name and
// data, each of these four preceded by its big-endian 16-bit length.
package xauth

import (
	"bytes"
	"encoding/binary"
	"errors"
	"fmt"
	"io"
	"os"
)

// cookieName is the one protocol Write writes and Cookie looks for.
const cookieName = "MIT-MAGIC-COOKIE-1"

// Write replaces path with a file (mode 0600) holding one MIT-MAGIC-COOKIE-1
// for any host ("FamilyWild") and display number (empty: any display). The
// file is written aside and renamed, so a reader sees the old or the new.
func Write(path, number string, cookie []byte) error {
	var b bytes.Buffer
	_ = binary.Write(&b, binary.BigEndian, uint16(0xffff)) // FamilyWild
	for _, field := range [][]byte{nil, []byte(number), []byte(cookieName), cookie} {
		_ = binary.Write(&b, binary.BigEndian, uint16(len(field)))
		b.Write(field)
	}
	tmp := path + ".tmp"
	_ = os.Remove(tmp)
	f, err := os.OpenFile(tmp, os.O_WRONLY|os.O_CREATE|os.O_EXCL, 0o600)
	if err != nil {
		return fmt.Errorf("xauthority: %w", err)
	}
	_, err = f.Write(b.Bytes())
	if cerr := f.Close(); err == nil {
		err = cerr
	}
	if err == nil {
		err = os.Rename(tmp, path)
	}
	if err != nil {
		_ = os.Remove(tmp)
		return fmt.Errorf("xauthority: %w", err)
	}
	return nil
}

// Cookie returns the first MIT-MAGIC-COOKIE-1 of the Xauthority file path.
func Cookie(path string) ([]byte, error) {
	data, err := os.ReadFile(path)
	if err != nil {
		return nil, fmt.Errorf("xauthority: %w", err)
	}
	r := bytes.NewReader(data)
	for r.Len() > 0 {
		var family uint16
		if err := binary.Read(r, binary.BigEndian, &family); err != nil {
			return nil, fmt.Errorf("xauthority %s: %w", path, err)
		}
		var fields [4][]byte
		for i := range fields {
			var n uint16
			if err := binary.Read(r, binary.BigEndian, &n); err != nil {
				return nil, fmt.Errorf("xauthority %s: %w", path, err)
			}
			fields[i] = make([]byte, n)
			if _, err := io.ReadFull(r, fields[i]); err != nil {
				return nil, fmt.Errorf("xauthority %s: %w", path, err)
			}
		}
		if string(fields[2]) == cookieName {
			return fields[3], nil
		}
	}
	return nil, fmt.Errorf("xauthority %s: %w", path, errNoCookie)
}

var errNoCookie = errors.New("no " + cookieName)
