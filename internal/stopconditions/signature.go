package stopconditions

import (
	"crypto/sha256"
	"encoding/hex"
	"regexp"
	"strings"
)

// signatureLines is how many non-empty lines of the error output a signature
// reads: the start of an error says what went wrong; what follows is mostly
// context that changes from run to run.
const signatureLines = 8

// The normalisations of Signature, applied in this order: the specific forms
// first, so that the bare-number rule does not cut them up.
var signatureRules = []struct {
	re   *regexp.Regexp
	repl string
}{
	{regexp.MustCompile(`\x1b\[[0-9;?]*[ -/]*[@-~]`), ""},                                           // terminal colours
	{regexp.MustCompile(`(/private)?/var/folders/[^\s:'"),]*|/tmp/[^\s:'"),]*`), "<tmp>"},           // temp paths
	{regexp.MustCompile(`\d{4}-\d\d-\d\d[T ]\d\d:\d\d(:\d\d(\.\d+)?)?(Z|[+-]\d\d:?\d\d)?`), "<ts>"}, // ISO timestamps
	{regexp.MustCompile(`\b\d\d?:\d\d:\d\d(\.\d+)?\b`), "<time>"},                                   // clock times
	{regexp.MustCompile(`\b0x[0-9a-fA-F]+\b`), "<addr>"},                                            // addresses
	{regexp.MustCompile(`\b[0-9a-fA-F]{8}-[0-9a-fA-F]{4}-[0-9a-fA-F]{4}-[0-9a-fA-F]{4}-[0-9a-fA-F]{12}\b`), "<id>"},
	{hexID, "<hex>"},
	{regexp.MustCompile(`\b(\d+(\.\d+)?(ns|us|µs|ms|s|m|h))+\b`), "<dur>"}, // durations
	{regexp.MustCompile(`\d+(\.\d+)?`), "<n>"},                             // numbers
	{regexp.MustCompile(`[ \t]+`), " "},
}

// hexID matches hex ids (commit hashes, object ids): runs of at least 7 hex
// digits. A run of letters alone is a word, not an id, and is kept, which
// Signature checks by requiring a digit; plain numbers are handled by the
// number rule either way.
var hexID = regexp.MustCompile(`\b[0-9a-fA-F]{7,}\b`)

// Signature is the error signature of a failed command: the command plus the
// first lines of its error output, normalised so that numbers, hex ids,
// durations, timestamps, temp paths and addresses do not change it, hashed to
// 12 hex characters. Two failures with the same signature are the same error.
func Signature(command string, output string) string {
	h := sha256.New()
	h.Write([]byte(normalise(command)))
	h.Write([]byte{0})
	n := 0
	for _, line := range strings.Split(output, "\n") {
		line = strings.TrimSpace(normalise(line))
		if line == "" {
			continue
		}
		h.Write([]byte(line))
		h.Write([]byte{'\n'})
		n++
		if n == signatureLines {
			break
		}
	}
	return hex.EncodeToString(h.Sum(nil))[:12]
}

func normalise(s string) string {
	for _, r := range signatureRules {
		if r.re == hexID {
			s = r.re.ReplaceAllStringFunc(s, func(m string) string {
				if strings.ContainsAny(m, "0123456789") {
					return r.repl
				}
				return m
			})
			continue
		}
		s = r.re.ReplaceAllString(s, r.repl)
	}
	return s
}
