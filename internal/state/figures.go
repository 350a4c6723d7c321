package state

import (
	"fmt"
	"math"
	"strconv"
)

// USD is an amount of US dollars in a report. Sums of floating-point costs
// carry noise (0.060000000000000005); every form of a report shows an
// amount through these methods, so each shows it at the same precision.
type USD float64

// USDDecimals is the precision of an amount in the machine forms (JSON,
// CSV): a millionth of a dollar, finer than one token of any price table.
const USDDecimals = 6

// RateDecimals is the precision of a rate (a share 0..1) in the machine
// forms: a hundredth of a percent.
const RateDecimals = 4

// String is the amount for machines: rounded to USDDecimals places, then
// written in the fewest digits ("0.06", "1.5", "0").
func (v USD) String() string { return fixed(float64(v), USDDecimals) }

// MarshalJSON writes the amount as String does.
func (v USD) MarshalJSON() ([]byte, error) { return []byte(v.String()), nil }

// Human is the amount for people: "$0.06", or four decimals below a cent
// ("$0.0042") so a small amount does not read as nothing.
func (v USD) Human() string {
	if v != 0 && math.Abs(float64(v)) < 0.01 {
		return fmt.Sprintf("$%.4f", float64(v))
	}
	return fmt.Sprintf("$%.2f", float64(v))
}

// Rate is a share from 0 to 1 in a report (completed runs of all runs).
type Rate float64

// String is the rate for machines: rounded to RateDecimals places, then
// written in the fewest digits ("0.3333", "0.5").
func (v Rate) String() string { return fixed(float64(v), RateDecimals) }

// MarshalJSON writes the rate as String does.
func (v Rate) MarshalJSON() ([]byte, error) { return []byte(v.String()), nil }

// Percent is the rate for people, in whole percent ("33%").
func (v Rate) Percent() string { return fmt.Sprintf("%.0f%%", 100*float64(v)) }

// fixed rounds v to decimals places and writes it in the fewest digits that
// read back as the rounded value: the nearest float to a short decimal
// prints as that decimal.
func fixed(v float64, decimals int) string {
	if math.IsNaN(v) || math.IsInf(v, 0) {
		return "0"
	}
	scale := math.Pow10(decimals)
	r := math.Round(v*scale) / scale
	if r == 0 {
		r = 0 // no "-0"
	}
	return strconv.FormatFloat(r, 'f', -1, 64)
}
