// Package buildinfo says which build of intentd runs: the module's version and the
// revision it was built from, for intentd --version, intentctl --version, GET /info and
// the intentd_build_info metric, so that an operator can tell which members of a
// cluster run what.
package buildinfo

import (
	"runtime"
	"runtime/debug"
)

// version, when set at release (go build -ldflags "-X
// github.com/intentd/intentd/internal/buildinfo.version=v1.2.3"), wins over the module
// version the Go toolchain records, which is "(devel)" or a pseudo-version in a checkout.
var version string

// Info is a build's identity.
type Info struct {
	// Version is the release, or the module version the toolchain recorded.
	Version string
	// Revision is the VCS revision the binary was built from; "" when not recorded
	// (a build outside a checkout, or with -buildvcs=false).
	Revision string
	// Modified says the checkout had changes not committed.
	Modified bool
	// GoVersion is the toolchain's version.
	GoVersion string
}

// Read returns the running binary's build.
func Read() Info {
	i := Info{Version: version, GoVersion: runtime.Version()}
	bi, ok := debug.ReadBuildInfo()
	if !ok {
		if i.Version == "" {
			i.Version = "unknown"
		}
		return i
	}
	if i.Version == "" {
		i.Version = bi.Main.Version
	}
	if i.Version == "" {
		i.Version = "(devel)"
	}
	for _, s := range bi.Settings {
		switch s.Key {
		case "vcs.revision":
			i.Revision = s.Value
		case "vcs.modified":
			i.Modified = s.Value == "true"
		}
	}
	return i
}

// String is the build as --version prints it: "v1.2.3 (revision 0123abc, modified,
// go1.25.0)".
func (i Info) String() string {
	s := i.Version + " ("
	if i.Revision != "" {
		s += "revision " + i.Revision
		if i.Modified {
			s += ", modified"
		}
		s += ", "
	}
	return s + i.GoVersion + ")"
}
