package evidence

import (
	"math"
	"strconv"
	"strings"
	"testing"
)

func TestParsePrice(t *testing.T) {
	tests := []struct {
		in      string
		want    int64
		wantErr string
	}{
		{in: "19.99", want: 1999},
		{in: "20", want: 2000},
		{in: "19.9", want: 1990},
		{in: "0.07", want: 7},
		{in: "0", want: 0},
		{in: "007.50", want: 750},
		{in: " 24.50\n", want: 2450},
		{in: "\u00a029.99", want: 2999},
		{in: "19.990", want: 1999},
		{in: "1,299.00", want: 129900},
		{in: "1,299", want: 129900},
		{in: "12,345,678.90", want: 1234567890},
		{in: "92233720368547758.07", want: math.MaxInt64},
		// 0.1 + 0.2 style values that a float would get wrong.
		{in: "0.29", want: 29},
		{in: "1.15", want: 115},
		{in: "4.35", want: 435},
		{in: "", wantErr: "empty"},
		{in: "  ", wantErr: "empty"},
		{in: "19.999", wantErr: "finer than a cent"},
		{in: "19.", wantErr: "no digits after"},
		{in: ".99", wantErr: "digit before"},
		{in: "-5.00", wantErr: "want digits"},
		{in: "+5.00", wantErr: "want digits"},
		{in: "1e3", wantErr: "want digits"},
		{in: "$19.99", wantErr: "want digits"},
		{in: "19.99 USD", wantErr: "want digits"},
		{in: "19,99", wantErr: "decimal comma"},
		{in: "1.299,00", wantErr: "after the decimal point"},
		{in: "1,2999.00", wantErr: "thousands"},
		{in: "1234,567", wantErr: "thousands"},
		{in: ",999", wantErr: "comma"},
		{in: "1,,999", wantErr: "comma"},
		{in: "1 299", wantErr: "want digits"},
		{in: "19.9x", wantErr: "after the decimal point"},
		{in: "92233720368547758.08", wantErr: "too large"},
		{in: "99999999999999999999", wantErr: "too large"},
		{in: "NaN", wantErr: "want digits"},
	}
	for _, tt := range tests {
		t.Run(strconv.Quote(tt.in), func(t *testing.T) {
			got, err := ParsePrice(tt.in)
			if tt.wantErr != "" {
				if err == nil || !strings.Contains(err.Error(), tt.wantErr) {
					t.Fatalf("ParsePrice(%q) = %d, %v; want an error containing %q", tt.in, got, err, tt.wantErr)
				}
				return
			}
			if err != nil || got != tt.want {
				t.Fatalf("ParsePrice(%q) = %d, %v; want %d", tt.in, got, err, tt.want)
			}
		})
	}
}

func FuzzParsePrice(f *testing.F) {
	for _, s := range []string{"19.99", "20", "19.9", "1,299.00", "0.070", "92233720368547758.07", "19,99", "1e3", "-1", " 5 ", ".5", "5."} {
		f.Add(s)
	}
	f.Fuzz(func(t *testing.T, s string) {
		cents, err := ParsePrice(s)
		if err != nil {
			return
		}
		if cents < 0 {
			t.Fatalf("ParsePrice(%q) = %d, negative", s, cents)
		}
		// An accepted price, written back plainly, must read the same: the
		// parse is exact and depends only on the digits.
		plain := strconv.FormatInt(cents/100, 10) + "." + strconv.FormatInt(100+cents%100, 10)[1:]
		again, err := ParsePrice(plain)
		if err != nil || again != cents {
			t.Fatalf("ParsePrice(%q) = %d, but ParsePrice(%q) = %d, %v", s, cents, plain, again, err)
		}
		// And it must agree with the digits of the input taken as an integer.
		digits := strings.Map(func(r rune) rune {
			if r >= '0' && r <= '9' {
				return r
			}
			return -1
		}, s)
		_, frac, _ := strings.Cut(strings.TrimSpace(s), ".")
		switch {
		case len(frac) < 2:
			digits += strings.Repeat("0", 2-len(frac))
		default:
			digits = digits[:len(digits)-(len(frac)-2)]
		}
		if want, err := strconv.ParseInt(digits, 10, 64); err != nil || want != cents {
			t.Fatalf("ParsePrice(%q) = %d, digits say %s", s, cents, digits)
		}
	})
}
