package evidence

import (
	"errors"
	"fmt"
	"math"
	"strings"
)

// ParsePrice converts a decimal price string to integer hundredths ("cents"),
// exactly: the digits are read as an integer, never through a float, so "19.99" is
// 1999, "20" is 2000 and "19.9" is 1990. Accepted: digits with an optional "." and
// fraction; more than two fraction digits only when the extra ones are zeros
// ("19.990"); commas as thousands separators in groups of three ("1,299.00").
// Refused: a sign, an exponent, a decimal comma ("19,99" is ambiguous across
// locales), currency symbols, spaces inside, and values beyond the int64 range.
// Surrounding white space is ignored.
func ParsePrice(s string) (int64, error) {
	t := strings.TrimSpace(s)
	if t == "" {
		return 0, errors.New("empty price")
	}
	intPart, frac, hasPoint := strings.Cut(t, ".")
	if hasPoint && frac == "" {
		return 0, fmt.Errorf("price %q: no digits after the decimal point", clip(s))
	}
	digits, err := priceIntDigits(intPart)
	if err != nil {
		return 0, fmt.Errorf("price %q: %v", clip(s), err)
	}
	for i := 0; i < len(frac); i++ {
		if frac[i] < '0' || frac[i] > '9' {
			return 0, fmt.Errorf("price %q: want digits after the decimal point", clip(s))
		}
	}
	if len(frac) > 2 && strings.Trim(frac[2:], "0") != "" {
		return 0, fmt.Errorf("price %q: finer than a cent", clip(s))
	}
	var cents int64
	for i := 0; i < len(digits); i++ {
		if cents, err = mulAdd(cents, int64(digits[i]-'0')); err != nil {
			return 0, fmt.Errorf("price %q: %v", clip(s), err)
		}
	}
	for i := 0; i < 2; i++ {
		d := int64(0)
		if i < len(frac) {
			d = int64(frac[i] - '0')
		}
		if cents, err = mulAdd(cents, d); err != nil {
			return 0, fmt.Errorf("price %q: %v", clip(s), err)
		}
	}
	return cents, nil
}

func mulAdd(n, d int64) (int64, error) {
	if n > (math.MaxInt64-d)/10 {
		return 0, errors.New("too large")
	}
	return n*10 + d, nil
}

// priceIntDigits returns the digits of the integer part, checking that commas, if
// any, separate groups of exactly three digits after a first group of one to three.
func priceIntDigits(p string) (string, error) {
	if p == "" {
		return "", errors.New("want a digit before the decimal point")
	}
	groups := strings.Split(p, ",")
	for i, g := range groups {
		if g == "" {
			return "", errors.New("misplaced comma")
		}
		for j := 0; j < len(g); j++ {
			if g[j] < '0' || g[j] > '9' {
				return "", fmt.Errorf("unexpected %q: want digits", clip(g[j:]))
			}
		}
		if len(groups) > 1 && ((i == 0 && len(g) > 3) || (i > 0 && len(g) != 3)) {
			return "", errors.New("commas must separate thousands (a decimal comma is not accepted)")
		}
	}
	if len(groups) == 1 {
		return p, nil
	}
	return strings.Join(groups, ""), nil
}
