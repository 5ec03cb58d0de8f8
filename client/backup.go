package client

import (
	"context"
	"errors"
	"fmt"
	"io"
	"net/http"
)

// ErrBackupBroken is wrapped by Backup's error when the server began the backup and
// did not finish it: what was copied is not a whole backup.
var ErrBackupBroken = errors.New("the server broke the backup off")

// Backup asks the server for an online backup of its store (POST /admin/backup, admin
// role) and copies it to w as it comes, returning the bytes copied. The backup is a
// gzip-compressed tar whose last member lists the others with their SHA-256: a copy
// that ends early or was changed does not pass intentctl's check, and a server that
// failed half-way breaks the answer off, which is an error here.
func (c *Client) Backup(ctx context.Context, w io.Writer) (int64, error) {
	resp, err := c.send(ctx, "POST", "/admin/backup", nil, "", nil)
	if err != nil {
		return 0, err
	}
	defer resp.Body.Close()
	if resp.StatusCode != http.StatusOK {
		return 0, decodeAPIError(resp)
	}
	n, err := io.Copy(w, resp.Body)
	if err != nil {
		return n, fmt.Errorf("POST /admin/backup: %w after %d bytes (its log says why): %w", ErrBackupBroken, n, err)
	}
	return n, nil
}
