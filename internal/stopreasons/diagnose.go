package stopreasons

import (
	"fmt"
	"strconv"
	"strings"
	"text/template"
	"unicode"
	"unicode/utf8"
)

// Details are the figures of one stop that fill a reason's templates.
type Details struct {
	RunID         string
	Condition     string   // the rule or condition that fired
	Value         string   // its value, formatted for people
	Threshold     string   // its threshold, formatted for people
	Message       string   // the evaluator's or the error's message
	Milestone     int      // 1-based
	MilestoneGoal string   //
	Command       string   // the failing command or agent program
	Signature     string   // an error signature
	Files         []string // files a guard named, at most MaxDetailFiles
	FilesOmitted  int      // the files a guard named beyond those
	Stash         []string // of Files, those a stash may take: all but the run's task and config files
	Other         string   // another run's id (collisions)
	ResetAt       string   // when a rate limit resets
	LimitKind     string   // which kind of limit: rate, usage_window, spend_cap, overloaded
	Tick          int      //
	Approved      int      // milestones approved
	Total         int      // milestones in all
	Grant         string   // a suggested amount to grant on resume (--time 30m, --max-ticks 200)
	// Untested work (changes_not_tested): no_tests or coverage, the share
	// of the changed executable lines verify ran and the threshold, as
	// percentages, and each file with the lines no verify command ran.
	UntestedKind        string
	Covered, MinChanged string
	Uncovered           []string
}

var funcs = template.FuncMap{
	"join":      strings.Join,
	"paths":     ShowPaths,
	"files":     ShowFiles,
	"count":     func(files []string, omitted int) int { return len(files) + omitted },
	"hasPrefix": strings.HasPrefix,
	"shellJoin": ShellJoin,
	"plural":    plural,
}

// plural is n things for a template, n a number or a figure written as
// text ("3"): "1 tick", "3 ticks". A figure that is not a whole number
// counts as many.
func plural(n any, noun string) string {
	switch x := n.(type) {
	case int:
		return Plural(x, noun)
	case string:
		if i, err := strconv.Atoi(x); err == nil {
			return Plural(i, noun)
		}
		_, many, _ := strings.Cut(Plural(2, noun), " ")
		return x + " " + many
	}
	_, many, _ := strings.Cut(Plural(2, noun), " ")
	return fmt.Sprint(n) + " " + many
}

// missing marks an empty field while rendering, so a next action that needs
// it (a command without its run id) is left out instead of printed broken.
const missing = "\x00"

// Diagnose fills the reason's diagnosis template.
func (r Reason) Diagnose(d Details) string {
	return strings.TrimSpace(render(r.Diagnosis, d))
}

// Actions fills the next-action templates, leaving out any that needs a
// figure the stop does not have.
func (r Reason) Actions(d Details) []string {
	probe := d
	if probe.RunID == "" {
		probe.RunID = missing
	}
	if probe.Other == "" {
		probe.Other = missing
	}
	if probe.Grant == "" {
		probe.Grant = missing
	}
	if len(probe.Files) == 0 {
		probe.Files = []string{missing}
	}
	if len(probe.Stash) == 0 {
		probe.Stash = []string{missing}
	}
	var out []string
	for _, a := range r.NextActions {
		s := render(a, probe)
		// shellJoin quotes the mark as it quotes any control character.
		if s == "" || strings.Contains(s, missing) || strings.Contains(s, ShellQuote(missing)) {
			continue
		}
		out = append(out, s)
	}
	return out
}

// IsCommand reports whether a next action is a command to run as printed.
func IsCommand(action string) bool {
	return strings.HasPrefix(action, "runr ") || strings.HasPrefix(action, "git ")
}

// Explain fills the reason's diagnosis and next actions with placeholders
// (<value>, <run-id>, <approved>), for explaining a reason without a run.
// Numbers are shown as names too: a "0 of 0 milestones approved" would read
// as a figure of some run.
func (r Reason) Explain() (diagnosis string, actions []string) {
	data := placeholderData()
	diagnosis = strings.TrimSpace(render(r.Diagnosis, data))
	for _, a := range r.NextActions {
		if s := render(a, data); s != "" {
			actions = append(actions, s)
		}
	}
	return diagnosis, actions
}

// placeholderData is Placeholders as template data, with the numeric fields
// shown as names; TestPlaceholderDataNamesEveryField keeps it in step with
// Details.
func placeholderData() map[string]any {
	ph := Placeholders()
	return map[string]any{
		"RunID": ph.RunID, "Condition": ph.Condition, "Value": ph.Value, "Threshold": ph.Threshold,
		"Message": ph.Message, "Milestone": "<milestone>", "MilestoneGoal": ph.MilestoneGoal, "Command": ph.Command,
		"Signature": ph.Signature, "Files": ph.Files, "FilesOmitted": 0, "Stash": ph.Stash, "Other": ph.Other, "ResetAt": ph.ResetAt,
		"LimitKind": ph.LimitKind, "Tick": "<tick>", "Approved": "<approved>", "Total": "<total>", "Grant": ph.Grant,
		"UntestedKind": ph.UntestedKind, "Covered": ph.Covered, "MinChanged": ph.MinChanged, "Uncovered": ph.Uncovered,
	}
}

func render(text string, d any) string {
	t, err := template.New("").Funcs(funcs).Parse(text)
	if err != nil {
		// The registry test parses every template, so this is a bug.
		return fmt.Sprintf("(template error: %v)", err)
	}
	var b strings.Builder
	if err := t.Execute(&b, d); err != nil {
		return fmt.Sprintf("(template error: %v)", err)
	}
	return b.String()
}

// ShellJoin quotes each word for a POSIX shell where it needs quoting.
func ShellJoin(words []string) string {
	q := make([]string, len(words))
	for i, w := range words {
		q[i] = ShellQuote(w)
	}
	return strings.Join(q, " ")
}

// ShellQuote quotes s for a POSIX shell if it contains anything but safe
// characters. A name with a control character (a newline) or bytes that
// are not UTF-8 becomes "$(printf '...')" with those bytes as octal
// escapes, so the command stays one line of printable text that works
// when pasted; trailing newlines, which $(...) would drop, become the
// pattern character ?, which the shell or git matches against the name.
func ShellQuote(s string) string {
	if s == "" {
		return "''"
	}
	safe := true
	for _, c := range s {
		if !(c >= 'a' && c <= 'z' || c >= 'A' && c <= 'Z' || c >= '0' && c <= '9' || strings.ContainsRune("-_./=:@,+%", c)) {
			safe = false
			break
		}
	}
	if safe {
		return s
	}
	if utf8.ValidString(s) && !strings.ContainsFunc(s, unicode.IsControl) {
		return "'" + strings.ReplaceAll(s, "'", `'\''`) + "'"
	}
	body := strings.TrimRight(s, "\n")
	tail := strings.Repeat("?", len(s)-len(body))
	if body == "" {
		return tail
	}
	var b strings.Builder
	if strings.HasPrefix(body, "-") {
		// printf would read it as an option.
		b.WriteString("./")
	}
	for i := 0; i < len(body); {
		r, n := utf8.DecodeRuneInString(body[i:])
		switch {
		case r == utf8.RuneError && n == 1, unicode.IsControl(r):
			for _, c := range []byte(body[i : i+n]) {
				fmt.Fprintf(&b, `\%03o`, c)
			}
		case r == '\\':
			b.WriteString(`\\`)
		case r == '%':
			b.WriteString("%%")
		case r == '\'':
			b.WriteString(`'\''`)
		default:
			b.WriteString(body[i : i+n])
		}
		i += n
	}
	return `"$(printf '` + b.String() + `')"` + tail
}

// Placeholders are Details that show where a run's own figures go, for
// explaining a reason without a run.
func Placeholders() Details {
	return Details{
		RunID: "<run-id>", Condition: "<rule>", Value: "<value>", Threshold: "<threshold>",
		Message: "<message>", Milestone: 0, MilestoneGoal: "<milestone goal>", Command: "<command>",
		Signature: "<signature>", Files: []string{"<file>"}, Stash: []string{"<file>"}, Other: "<other-run-id>", ResetAt: "<reset time>", LimitKind: "<limit kind>",
		Grant: "<amount>", UntestedKind: "<kind>", Covered: "<covered>", MinChanged: "<min_changed>", Uncovered: []string{"<file> <lines>"},
	}
}

// ShowPaths joins file names for a line of text, quoting any name with a
// control character (a newline in a file name would break the line) or
// invalid UTF-8.
func ShowPaths(paths []string) string {
	shown := make([]string, len(paths))
	for i, p := range paths {
		shown[i] = p
		if !utf8.ValidString(p) || strings.ContainsFunc(p, unicode.IsControl) {
			shown[i] = strconv.Quote(p)
		}
	}
	return strings.Join(shown, ", ")
}
