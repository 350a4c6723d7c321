package agents

import (
	"bytes"
	"strings"
	"unicode/utf8"
)

// statusPrefix starts a status line an agent prints about its own work.
const statusPrefix = "RUNR_STATUS:"

// DetectSignal finds the agent's completion signal in text: a whole line
// `RUNR_STATUS: done|blocked|failed [text]`, or the promise as a whole line
// (done). A line that is also a whole line of the prompt is ignored, so an
// agent echoing its instructions never signals. When several lines signal,
// the last one wins: it is the agent's latest word.
func DetectSignal(text, promise, prompt string) (Signal, string) {
	d := newSignalDetector(promise, prompt)
	for line := range bytes.SplitSeq([]byte(text), []byte("\n")) {
		d.line(line)
	}
	return d.signal, d.text
}

// signalDetector applies DetectSignal's rules one line at a time, so a
// command agent's stdout can be scanned as it streams. A line that is neither
// the promise nor starts with RUNR_STATUS: cannot signal, whatever the prompt
// says; telling so takes a trim and two comparisons and allocates nothing, and
// only a line that can signal is looked up among the prompt's lines.
type signalDetector struct {
	promise string
	prompt  string
	starts  [256]bool       // the first bytes of a line that can signal
	echoes  map[string]bool // the prompt's trimmed lines, built at the first line that can signal
	signal  Signal
	text    string
}

func newSignalDetector(promise, prompt string) *signalDetector {
	if promise == "" {
		promise = DefaultPromise
	}
	d := &signalDetector{promise: strings.TrimSpace(promise), prompt: prompt}
	markStarts(&d.starts, statusPrefix)
	markStarts(&d.starts, d.promise)
	return d
}

// markStarts marks in t the bytes a line can begin with that, trimmed,
// begins with prefix: its first byte, the ASCII blanks, and every byte of
// a longer UTF-8 rune (which may be a blank bytes.TrimSpace knows).
func markStarts(t *[256]bool, prefix string) {
	for c := range t {
		if c >= utf8.RuneSelf || asciiSpace[c] {
			t[c] = true
		}
	}
	if prefix != "" {
		t[prefix[0]] = true
	}
}

func (d *signalDetector) line(b []byte) {
	// Most lines start with a character that is neither white space nor the
	// first of a signal: such a line cannot signal, and is not even trimmed.
	if len(b) > 0 && !d.starts[b[0]] {
		return
	}
	b = bytes.TrimSpace(b)
	if len(b) == 0 {
		return
	}
	isPromise := string(b) == d.promise
	if !isPromise && !bytes.HasPrefix(b, []byte(statusPrefix)) {
		return
	}
	if d.echoes == nil {
		d.echoes = map[string]bool{}
		for l := range strings.SplitSeq(d.prompt, "\n") {
			if l = strings.TrimSpace(l); l != "" {
				d.echoes[l] = true
			}
		}
	}
	if d.echoes[string(b)] {
		return
	}
	if isPromise {
		d.signal, d.text = SignalDone, ""
		return
	}
	if s, text, ok := parseStatusLine(string(b)); ok {
		d.signal, d.text = s, text
	}
}

// asciiSpace is the ASCII white space that strings.TrimSpace trims.
var asciiSpace = [utf8.RuneSelf]bool{'\t': true, '\n': true, '\v': true, '\f': true, '\r': true, ' ': true}

// parseStatusLine reads `RUNR_STATUS: <word> [text]`; the word must be a
// known signal and stand alone ("doneish" is not "done").
func parseStatusLine(line string) (Signal, string, bool) {
	rest, ok := strings.CutPrefix(line, statusPrefix)
	if !ok {
		return "", "", false
	}
	rest = strings.TrimSpace(rest)
	end := strings.IndexAny(rest, " \t:-—,.")
	word, after := rest, ""
	if end >= 0 {
		word, after = rest[:end], rest[end:]
	}
	var s Signal
	switch strings.ToLower(word) {
	case "done":
		s = SignalDone
	case "blocked":
		s = SignalBlocked
	case "failed":
		s = SignalFailed
	default:
		return "", "", false
	}
	return s, strings.TrimSpace(strings.TrimLeft(after, " \t:-—,.")), true
}
