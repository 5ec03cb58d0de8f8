//go:build !unix

package persistence

// statfsFree is nil where the free space cannot be read: writes are never refused for
// want of space, and a full disk stops the process as Pebble does.
var statfsFree func(dir string) (uint64, error)
