package agents

import (
	"strings"
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
	for _, line := range strings.Split(text, "\n") {
		d.line(line)
	}
	return d.signal, d.text
}

// signalDetector applies DetectSignal's rules one line at a time, so a
// command agent's stdout can be scanned as it streams.
type signalDetector struct {
	promise string
	prompt  map[string]bool
	signal  Signal
	text    string
}

func newSignalDetector(promise, prompt string) *signalDetector {
	if promise == "" {
		promise = DefaultPromise
	}
	d := &signalDetector{promise: strings.TrimSpace(promise), prompt: map[string]bool{}}
	for _, l := range strings.Split(prompt, "\n") {
		if l = strings.TrimSpace(l); l != "" {
			d.prompt[l] = true
		}
	}
	return d
}

func (d *signalDetector) line(line string) {
	line = strings.TrimSpace(line)
	if line == "" || d.prompt[line] {
		return
	}
	if line == d.promise {
		d.signal, d.text = SignalDone, ""
		return
	}
	if s, text, ok := parseStatusLine(line); ok {
		d.signal, d.text = s, text
	}
}

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
