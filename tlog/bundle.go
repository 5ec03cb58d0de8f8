package tlog

import (
	"encoding/binary"
	"errors"
	"fmt"
)

// ParseBundle splits a tlog-tiles entry bundle into its entries: each after its length
// as a big-endian uint16, at most TileWidth of them, none empty. The entries share the
// bundle's memory. A bundle read back from the store is checked this strictly, so that
// a log rebuilt from it holds exactly the leaves that were written.
func ParseBundle(b []byte) ([][]byte, error) {
	var entries [][]byte
	for len(b) > 0 {
		if len(entries) == TileWidth {
			return nil, fmt.Errorf("entry bundle: more than %d entries", TileWidth)
		}
		if len(b) < 2 {
			return nil, errors.New("entry bundle: a length cut short")
		}
		n := int(binary.BigEndian.Uint16(b))
		if n == 0 {
			return nil, fmt.Errorf("entry bundle: entry %d is empty", len(entries))
		}
		if len(b)-2 < n {
			return nil, fmt.Errorf("entry bundle: entry %d is %d bytes, %d remain", len(entries), n, len(b)-2)
		}
		entries = append(entries, b[2:2+n:2+n])
		b = b[2+n:]
	}
	return entries, nil
}

// AppendBundle appends entries to dst as a tlog-tiles entry bundle; each entry is at
// most 65535 bytes, as MarshalLogEntry's always are.
func AppendBundle(dst []byte, entries ...[]byte) []byte {
	for _, e := range entries {
		dst = binary.BigEndian.AppendUint16(dst, uint16(len(e)))
		dst = append(dst, e...)
	}
	return dst
}
