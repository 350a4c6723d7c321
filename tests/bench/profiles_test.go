package bench

import (
	"fmt"
	"testing"
)

const (
	profileBytes  = 250 << 20 // an LCOV profile just under the 256 MiB runr reads
	profileMaxRSS = 64 << 20
)

// profiles: coverage profiles are untrusted input of any size. A verify
// writes a 250 MiB LCOV profile naming the changed file over and over, and
// a 1 GiB one; runr reads the first as a stream, keeping only what it says
// of the changed lines, refuses the second by its size, and completes the
// run within 64 MiB of memory.
func (b *bench) profiles(t *testing.T) {
	repo, home := b.repo(t)
	verify := fmt.Sprintf(`printf 'TN:\nSF:calc.go\n' > "$RUNR_COVERAGE_DIR/big.lcov" && `+
		`yes DA:1,1 | head -c %d >> "$RUNR_COVERAGE_DIR/big.lcov" && `+
		`truncate -s 1G "$RUNR_COVERAGE_DIR/huge.info"`, profileBytes)
	agent := `printf 'package calc\nvar A = 1\n' > calc.go; echo 'RUNR_STATUS: done'`
	p := b.runRSS(t, repo, b.env(home, "RUNR_VERIFY_COVERAGE_MIN_CHANGED=0.5"), nil,
		b.runr, "run", "--prompt", "add calc.go", "--verify", verify, "--quiet", "--", "sh", "-c", agent)
	mustExit(t, p, 0, "runr (coverage profiles)")
	report(t, row{
		Figure:   "coverage profiles read after verify: 250 MiB of LCOV and a 1 GiB file; runr's max RSS",
		Runr:     fmt.Sprintf("%s in %s", mib(p.maxRSS), ms(p.wall)),
		Baseline: "-",
		Ratio:    "-",
		Target:   "RSS ≤ 64 MiB",
		Met:      p.maxRSS <= profileMaxRSS,
	})
}
