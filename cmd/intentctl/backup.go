package main

import (
	"errors"
	"fmt"
	"os"
	"path/filepath"

	"github.com/intentd/intentd/client"
	"github.com/intentd/intentd/internal/backup"
)

// backup saves an online backup of the server's store in a file. The bytes go to a
// file beside it first, which is read back and checked whole (every member's SHA-256,
// the list of members, gzip's checksum) before it is renamed into place: a FILE that
// exists after a run is a whole backup, an earlier FILE is replaced only by a whole
// one, and whatever goes wrong (the server, the network, a full disk) leaves no partial
// file behind.
func (c *cli) backup(args []string) error {
	fs := c.flags("backup")
	out := fs.String("o", "", "the file to write the backup to (a .tar.gz); replaced only once the new backup is whole")
	_, api, err := c.begin(fs, args, 0, "no arguments")
	if err != nil {
		return err
	}
	if *out == "" {
		return usagef("-o FILE is required: the file the backup is written to")
	}
	f, err := os.CreateTemp(filepath.Dir(*out), "."+filepath.Base(*out)+".partial-")
	if err != nil {
		return err
	}
	tmp := f.Name()
	done := false
	defer func() {
		if !done {
			f.Close()
			os.Remove(tmp)
		}
	}()
	// A backup takes as long as the store is large: --timeout, meant for one answer,
	// does not bound it; an interrupt does, and the server lets go of a caller that
	// stops reading.
	n, err := api.Backup(c.ctx, f)
	if errors.Is(err, client.ErrBackupBroken) {
		return fmt.Errorf("%w; nothing was kept", err)
	}
	if err != nil {
		return c.reach(err)
	}
	if err := f.Sync(); err != nil {
		return fmt.Errorf("write %s: %w", tmp, err)
	}
	if _, err := f.Seek(0, 0); err != nil {
		return err
	}
	h, err := backup.Check(f)
	if err != nil {
		var be *backup.Error
		if errors.As(err, &be) {
			return fmt.Errorf("the server's backup did not arrive whole, and was not kept: %w", err)
		}
		return err
	}
	if err := f.Close(); err != nil {
		return err
	}
	if err := os.Rename(tmp, *out); err != nil {
		return err
	}
	done = true
	if c.g.json {
		return c.printJSON(map[string]any{"file": *out, "bytes": n, "store": h.Store, "created": h.Created})
	}
	fmt.Fprintf(c.stdout, "wrote a backup of the %s store taken at %s to %s (%d bytes), checked whole; restore it with: intentd restore --data NEW-FOLDER %s\n",
		h.Store, h.Created.Format("2006-01-02 15:04:05 UTC"), *out, n, *out)
	return nil
}
