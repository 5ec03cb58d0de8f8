package tlog

import (
	"errors"
	"strconv"
	"strings"
)

// TilePath is a resource of the tlog-tiles layout under tile/: a tile of hashes
// (Entries false, at Level) or an entry bundle (Entries true), its Index, and its
// Width: TileWidth for a full one, 1 to TileWidth-1 for a partial one (".p/W").
type TilePath struct {
	Entries bool
	Level   uint64
	Index   uint64
	Width   int
}

// maxIndexGroups bounds the "x" groups of an index: enough for any uint64.
const maxIndexGroups = 7

// ParseTilePath reads the path after "tile/": "<L>/<N>[.p/<W>]" or
// "entries/<N>[.p/<W>]", with N in groups of three digits, each but the last after an
// "x" (tlog-tiles). Only the one spelling the layout gives each resource is accepted,
// so that a cache never holds one resource under two names.
func ParseTilePath(p string) (TilePath, error) {
	var t TilePath
	head, rest, ok := strings.Cut(p, "/")
	if !ok {
		return t, errors.New("tile path: want <L>/<N> or entries/<N>")
	}
	if head == "entries" {
		t.Entries = true
	} else {
		l, err := parseSmall(head, 63)
		if err != nil {
			return t, errors.New("tile path: level is not 0 to 63")
		}
		t.Level = uint64(l)
	}
	t.Width = TileWidth
	if n, w, partial := strings.Cut(rest, ".p/"); partial {
		width, err := parseSmall(w, TileWidth-1)
		if err != nil || width == 0 {
			return t, errors.New("tile path: partial width is not 1 to 255")
		}
		rest, t.Width = n, width
	}
	groups := strings.Split(rest, "/")
	if len(groups) > maxIndexGroups {
		return t, errors.New("tile path: index too long")
	}
	for i, g := range groups {
		last := i == len(groups)-1
		if !last {
			var ok bool
			if g, ok = strings.CutPrefix(g, "x"); !ok {
				return t, errors.New("tile path: index groups but the last begin with x")
			}
			if i == 0 && g == "000" {
				return t, errors.New("tile path: index has a leading zero group")
			}
		}
		if len(g) != 3 || !digits(g) {
			return t, errors.New("tile path: index groups are three digits")
		}
		d, _ := strconv.ParseUint(g, 10, 64)
		if t.Index > (1<<64-1-d)/1000 {
			return t, errors.New("tile path: index overflows")
		}
		t.Index = t.Index*1000 + d
	}
	return t, nil
}

// String is the path of t after "tile/", as ParseTilePath reads it.
func (t TilePath) String() string {
	var b strings.Builder
	if t.Entries {
		b.WriteString("entries/")
	} else {
		b.WriteString(strconv.FormatUint(t.Level, 10))
		b.WriteByte('/')
	}
	var groups []string
	n := t.Index
	for {
		groups = append(groups, strconv.FormatUint(1000+n%1000, 10)[1:])
		if n /= 1000; n == 0 {
			break
		}
	}
	for i := len(groups) - 1; i > 0; i-- {
		b.WriteString("x" + groups[i] + "/")
	}
	b.WriteString(groups[0])
	if t.Width < TileWidth {
		b.WriteString(".p/" + strconv.Itoa(t.Width))
	}
	return b.String()
}

// parseSmall reads a decimal number in its shortest spelling, at most max.
func parseSmall(s string, max int) (int, error) {
	if s == "" || len(s) > 3 || !digits(s) || (len(s) > 1 && s[0] == '0') {
		return 0, errors.New("not a number")
	}
	n, _ := strconv.Atoi(s)
	if n > max {
		return 0, errors.New("too large")
	}
	return n, nil
}

func digits(s string) bool {
	for i := 0; i < len(s); i++ {
		if s[i] < '0' || s[i] > '9' {
			return false
		}
	}
	return true
}
