package tlog

import (
	"testing"
)

func TestParseTilePath(t *testing.T) {
	tests := []struct {
		path string
		want TilePath
		ok   bool
	}{
		{"0/000", TilePath{Level: 0, Index: 0, Width: 256}, true},
		{"0/001.p/7", TilePath{Index: 1, Width: 7}, true},
		{"1/x001/x234/067", TilePath{Level: 1, Index: 1234067, Width: 256}, true},
		{"entries/x001/234.p/255", TilePath{Entries: true, Index: 1234, Width: 255}, true},
		{"63/999", TilePath{Level: 63, Index: 999, Width: 256}, true},
		{"entries/x018/x446/x744/x073/x709/x551/615", TilePath{Entries: true, Index: 1<<64 - 1, Width: 256}, true},
		{"entries/x018/x446/x744/x073/x709/x551/616", TilePath{}, false}, // overflows
		{"64/000", TilePath{}, false},
		{"00/000", TilePath{}, false},
		{"0/0", TilePath{}, false},
		{"0/1000", TilePath{}, false},
		{"0/x000/001", TilePath{}, false}, // a leading zero group: not the layout's spelling
		{"0/001/002", TilePath{}, false},
		{"0/000.p/0", TilePath{}, false},
		{"0/000.p/256", TilePath{}, false},
		{"0/000.p/07", TilePath{}, false},
		{"0/000.p/", TilePath{}, false},
		{"0/-01", TilePath{}, false},
		{"0/+01", TilePath{}, false},
		{"entries", TilePath{}, false},
		{"", TilePath{}, false},
		{"0/000/", TilePath{}, false},
		{"x/000", TilePath{}, false},
	}
	for _, tt := range tests {
		t.Run(tt.path, func(t *testing.T) {
			got, err := ParseTilePath(tt.path)
			if (err == nil) != tt.ok {
				t.Fatalf("ParseTilePath(%q) = %+v, %v; want ok %v", tt.path, got, err, tt.ok)
			}
			if !tt.ok {
				return
			}
			if got != tt.want {
				t.Fatalf("ParseTilePath(%q) = %+v, want %+v", tt.path, got, tt.want)
			}
			if s := got.String(); s != tt.path {
				t.Fatalf("String() = %q, want %q", s, tt.path)
			}
		})
	}
}

// FuzzParseTilePath checks that every path accepted is the one spelling of what it
// names: String gives it back exactly.
func FuzzParseTilePath(f *testing.F) {
	for _, s := range []string{"0/000", "1/x001/x234/067", "entries/x001/234.p/255", "0/x000/001", "63/999.p/1"} {
		f.Add(s)
	}
	f.Fuzz(func(t *testing.T, p string) {
		tp, err := ParseTilePath(p)
		if err != nil {
			return
		}
		if tp.Width < 1 || tp.Width > TileWidth || tp.Level > 63 {
			t.Fatalf("ParseTilePath(%q) = %+v: out of range", p, tp)
		}
		if s := tp.String(); s != p {
			t.Fatalf("ParseTilePath(%q).String() = %q", p, s)
		}
	})
}
