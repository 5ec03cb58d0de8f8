//go:build unix

package persistence

import "golang.org/x/sys/unix"

// statfsFree is the space of dir's file system that an unprivileged writer may use.
var statfsFree = func(dir string) (uint64, error) {
	var st unix.Statfs_t
	if err := unix.Statfs(dir, &st); err != nil {
		return 0, err
	}
	return uint64(st.Bavail) * uint64(st.Bsize), nil
}
