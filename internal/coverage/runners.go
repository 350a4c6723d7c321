package coverage

import (
	"bufio"
	"bytes"
	"io"
	"regexp"
	"slices"
	"strconv"
	"strings"
)

// Test runners whose summary lines Tests recognises.
const (
	RunnerGo     = "go test"
	RunnerPytest = "pytest"
	RunnerCargo  = "cargo test"
	RunnerNode   = "node --test"
	RunnerJest   = "jest"
	RunnerVitest = "vitest"
	RunnerPlain  = "N passed, N failed"
)

// Tests is what the summaries of the test runners in a verify run's output
// say: which runners were recognised, and how many tests each ran.
type Tests struct {
	Ran map[string]int
	// Partial: part of the output was not read (its log kept only its head
	// and tail, or it was longer than what is scanned), so a runner's
	// summary of tests that ran may be in what was left out.
	Partial bool
}

// Recognised lists the runners whose summaries were found, in name order.
func (t Tests) Recognised() []string {
	var out []string
	for r := range t.Ran {
		out = append(out, r)
	}
	slices.Sort(out)
	return out
}

// NoneRan reports whether runners were recognised and every one of them
// reported that no test ran, in the whole output: output read in part
// cannot tell that none ran.
func (t Tests) NoneRan() bool {
	if len(t.Ran) == 0 || t.Partial {
		return false
	}
	for _, n := range t.Ran {
		if n > 0 {
			return false
		}
	}
	return true
}

var (
	ansi = regexp.MustCompile(`\x1b\[[0-9;?]*[A-Za-z]`)
	// go test: "ok  	pkg	0.01s [no tests to run]", "?   	pkg	[no test files]".
	goOK      = regexp.MustCompile(`^ok\s+\S+\s+(\S+s|\(cached\))`)
	goNoFiles = regexp.MustCompile(`^\?\s+\S+\s+\[no test files\]`)
	// pytest's last line: "=== 1 passed, 2 deselected in 0.04s ===", "no tests ran in 0.00s".
	pytestLine = regexp.MustCompile(`^=*\s*((?:\d+ [a-z]+(?:, )?)+|no tests ran) in [0-9.]+s\b`)
	countWord  = regexp.MustCompile(`(\d+) ([a-z]+)`)
	// cargo test: "test result: ok. 1 passed; 0 failed; ...".
	cargoLine = regexp.MustCompile(`^test result: \S+\. (\d+) passed; (\d+) failed;`)
	// node --test: "ℹ tests 1" (spec) or "# tests 1" (tap).
	nodeLine = regexp.MustCompile(`^(?:ℹ|#) tests (\d+)$`)
	// Jest: "Tests:       1 failed, 2 passed, 3 total"; "No tests found, exiting with code 0".
	jestLine    = regexp.MustCompile(`^Tests:\s+(.*\d+ total)$`)
	jestNone    = regexp.MustCompile(`^No tests found, exiting with code \d+`)
	vitestLine  = regexp.MustCompile(`^Tests\s+(.*)\(\d+\)$`)
	vitestNone  = regexp.MustCompile(`^No test files found, exiting with code \d+`)
	plainPassed = regexp.MustCompile(`^(\d+) passed, (\d+) failed\b`)
)

// ranWords are the outcomes of a test that ran, in the summaries that
// count tests by outcome.
var ranWords = map[string]bool{"passed": true, "failed": true, "error": true, "errors": true, "xfailed": true, "xpassed": true}

// CountTests reads the summary lines of the test runners it knows in a
// verify run's output.
func CountTests(output []byte) Tests { return CountTestsIn(bytes.NewReader(output)) }

// CountTestsIn is CountTests over a stream, such as a verify's log: a line
// longer than 1 MiB ends the reading (what was counted stays).
func CountTestsIn(r io.Reader) Tests {
	t := Tests{Ran: map[string]int{}}
	add := func(runner string, n int) { t.Ran[runner] += n }
	sc := bufio.NewScanner(r)
	sc.Buffer(make([]byte, 0, 64<<10), 1<<20)
	for sc.Scan() {
		line := strings.TrimSpace(ansi.ReplaceAllString(sc.Text(), ""))
		switch {
		case goOK.MatchString(line):
			if strings.Contains(line, "[no tests to run]") {
				add(RunnerGo, 0)
			} else {
				add(RunnerGo, 1)
			}
		case goNoFiles.MatchString(line):
			add(RunnerGo, 0)
		case cargoLine.MatchString(line):
			m := cargoLine.FindStringSubmatch(line)
			add(RunnerCargo, atoi(m[1])+atoi(m[2]))
		case nodeLine.MatchString(line):
			add(RunnerNode, atoi(nodeLine.FindStringSubmatch(line)[1]))
		case jestLine.MatchString(line):
			add(RunnerJest, ranIn(jestLine.FindStringSubmatch(line)[1]))
		case jestNone.MatchString(line):
			add(RunnerJest, 0)
		case vitestLine.MatchString(line):
			add(RunnerVitest, ranIn(vitestLine.FindStringSubmatch(line)[1]))
		case vitestNone.MatchString(line):
			add(RunnerVitest, 0)
		case pytestLine.MatchString(line):
			add(RunnerPytest, ranIn(pytestLine.FindStringSubmatch(line)[1]))
		case plainPassed.MatchString(line):
			m := plainPassed.FindStringSubmatch(line)
			add(RunnerPlain, atoi(m[1])+atoi(m[2]))
		}
	}
	return t
}

// ranIn counts the tests that ran in "1 failed, 2 passed, 1 skipped".
func ranIn(s string) int {
	n := 0
	for _, m := range countWord.FindAllStringSubmatch(s, -1) {
		if ranWords[m[2]] {
			n += atoi(m[1])
		}
	}
	return n
}

func atoi(s string) int {
	n, _ := strconv.Atoi(s)
	return n
}
