package console

import (
	"crypto/sha256"
	"embed"
	"encoding/base64"
	"io/fs"
	"mime"
	"path"
	"sort"
)

//go:embed assets
var assets embed.FS

// File is one file of the console, read once at start-up.
type File struct {
	// Name is its path under /ui/, such as "app.js".
	Name string
	// ContentType is what it is served as.
	ContentType string
	// ETag is a strong validator of its bytes, so that a browser revalidates instead of
	// fetching again: embedded files have no modification time to compare.
	ETag string
	// Body is its content.
	Body []byte
}

// Files returns every file of the console, sorted by name. The set is fixed when the
// binary is built, so a server registers each by name rather than serving a folder.
func Files() []File {
	var files []File
	err := fs.WalkDir(assets, "assets", func(p string, d fs.DirEntry, err error) error {
		if err != nil || d.IsDir() {
			return err
		}
		body, err := assets.ReadFile(p)
		if err != nil {
			return err
		}
		sum := sha256.Sum256(body)
		name := p[len("assets/"):]
		files = append(files, File{
			Name:        name,
			ContentType: contentType(name),
			ETag:        `"` + base64.RawURLEncoding.EncodeToString(sum[:12]) + `"`,
			Body:        body,
		})
		return nil
	})
	if err != nil {
		// The files are in the binary: failing to read them is a broken build.
		panic("console: " + err.Error())
	}
	sort.Slice(files, func(i, j int) bool { return files[i].Name < files[j].Name })
	return files
}

// contentType is the type of a console file by its extension. JavaScript modules must
// be served as JavaScript, whatever the system's MIME table says, or browsers refuse
// to run them.
func contentType(name string) string {
	switch path.Ext(name) {
	case ".js":
		return "text/javascript; charset=utf-8"
	case ".html":
		return "text/html; charset=utf-8"
	case ".css":
		return "text/css; charset=utf-8"
	case ".svg":
		return "image/svg+xml"
	}
	if t := mime.TypeByExtension(path.Ext(name)); t != "" {
		return t
	}
	return "application/octet-stream"
}
