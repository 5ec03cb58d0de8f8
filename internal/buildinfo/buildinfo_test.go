package buildinfo

import (
	"runtime"
	"strings"
	"testing"
)

func TestString(t *testing.T) {
	for _, tc := range []struct {
		in   Info
		want string
	}{
		{Info{Version: "v1.2.3", Revision: "0123abc", GoVersion: "go1.25.0"}, "v1.2.3 (revision 0123abc, go1.25.0)"},
		{Info{Version: "v1.2.3", Revision: "0123abc", Modified: true, GoVersion: "go1.25.0"}, "v1.2.3 (revision 0123abc, modified, go1.25.0)"},
		{Info{Version: "(devel)", GoVersion: "go1.25.0"}, "(devel) (go1.25.0)"},
	} {
		if got := tc.in.String(); got != tc.want {
			t.Errorf("%+v.String() = %q, want %q", tc.in, got, tc.want)
		}
	}
}

// TestRead: a test binary has a build, whose toolchain is the running one; a version
// set at release wins.
func TestRead(t *testing.T) {
	i := Read()
	if i.Version == "" || i.GoVersion != runtime.Version() {
		t.Errorf("Read() = %+v, want a version and %s", i, runtime.Version())
	}
	version = "v9.9.9"
	defer func() { version = "" }()
	if got := Read(); !strings.HasPrefix(got.String(), "v9.9.9 (") {
		t.Errorf("with a release version set, Read() = %v", got)
	}
}
