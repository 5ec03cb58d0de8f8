// Package storeformat is the record of a store's data format, which both stores keep
// (Pebble under a key of its own, NATS in its bucket of records) and check at start:
// its encoding, its decoder, and the messages of a store this build cannot open. Each
// store keeps its own format number and history; this package holds only what they
// share, so that both say the same things the same way.
package storeformat

import (
	"bytes"
	"encoding/json"
	"fmt"
	"strings"
)

// Record is what a store records of its format: the number, and the build of intentd
// that recorded it, named in the message of a build too old to open the store.
type Record struct {
	// Format is the store's data format, 1 or more.
	Format int `json:"format"`
	// WrittenBy is the version of the intentd that recorded the format.
	WrittenBy string `json:"written_by"`
}

// maxRecord bounds what Decode reads: a record is some tens of bytes.
const maxRecord = 4096

// Encode is the record's bytes: JSON, so that an operator reads it with the tools of
// the store (nats kv get) as it is.
func (r Record) Encode() []byte {
	b, _ := json.Marshal(r) // a struct of an int and a string always encodes
	return b
}

// Decode reads a record Encode wrote. It refuses what is not one: not a JSON object, a
// format missing or below 1, a written_by that is not a string. Members it does not
// know are let through, so that a later version may add some and an earlier one still
// reads the format and refuses it by number.
func Decode(b []byte) (Record, error) {
	if len(b) > maxRecord {
		return Record{}, fmt.Errorf("the record is %d bytes, more than a format record's %d", len(b), maxRecord)
	}
	var raw struct {
		Format    *int    `json:"format"`
		WrittenBy *string `json:"written_by"`
	}
	dec := json.NewDecoder(bytes.NewReader(b))
	if err := dec.Decode(&raw); err != nil {
		return Record{}, fmt.Errorf("the record is not a JSON object of a format: %w", err)
	}
	if dec.More() {
		return Record{}, fmt.Errorf("the record has bytes after its JSON object")
	}
	if raw.Format == nil {
		return Record{}, fmt.Errorf("the record has no member \"format\"")
	}
	if *raw.Format < 1 {
		return Record{}, fmt.Errorf("the record's format is %d, where formats start at 1", *raw.Format)
	}
	r := Record{Format: *raw.Format}
	if raw.WrittenBy != nil {
		r.WrittenBy = *raw.WrittenBy
	}
	return r, nil
}

// Newer is the message of a store whose format is newer than the newest this build
// reads (current): which format, which version recorded it, and the two ways on.
// where names the store (its folder, or its stream).
func Newer(where string, got Record, current int, running string) error {
	by := got.WrittenBy
	if strings.TrimSpace(by) == "" {
		by = "an unnamed build"
	}
	return fmt.Errorf("%s is of data format %d, recorded by intentd %s; this intentd (%s) reads formats up to %d: "+
		"run intentd %s or later on it, or restore the backup taken before the upgrade to run this one "+
		"(docs/operating.md, \"Upgrading\")", where, got.Format, by, running, current, by)
}

// Damaged is the message of a format record that cannot be read.
func Damaged(where string, err error) error {
	return fmt.Errorf("%s: its data format record is damaged (%v): intentd does not know which format the store is in, "+
		"and will not guess; restore the store from a backup (docs/operating.md, \"Upgrading\")", where, err)
}
