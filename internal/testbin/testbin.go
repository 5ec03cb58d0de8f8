// Package testbin keeps the programs a test process builds to run as processes of their
// own (intentd, the release before it) in one folder made for that process, which its
// TestMain removes once the tests have run. A folder of each test's own would build the
// programs again for every test; one that outlived the tests was left behind by every
// run, 60 MB for each program.
package testbin

import (
	"os"
	"sync"
)

var folder struct {
	sync.Mutex
	path string
}

// Dir returns the process's folder for built programs, made at the first call.
func Dir() (string, error) {
	folder.Lock()
	defer folder.Unlock()
	if folder.path == "" {
		dir, err := os.MkdirTemp("", "intentd-testbin-")
		if err != nil {
			return "", err
		}
		folder.path = dir
	}
	return folder.path, nil
}

// Remove removes the folder and what was built in it, if Dir made one. Programs still
// running from it go on; the folder is gone once they end.
func Remove() error {
	folder.Lock()
	defer folder.Unlock()
	if folder.path == "" {
		return nil
	}
	err := os.RemoveAll(folder.path)
	folder.path = ""
	return err
}
