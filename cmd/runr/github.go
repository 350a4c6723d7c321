package main

import (
	"crypto/rand"
	"encoding/hex"
	"fmt"
	"math"
	"os"
	"strconv"
	"strings"
	"time"

	"golang.org/x/sys/unix"

	"github.com/runr-dev/runr/internal/report"
	"github.com/runr-dev/runr/internal/state"
	"github.com/runr-dev/runr/internal/stopreasons"
	"github.com/runr-dev/runr/internal/termtext"
)

// githubReport tells GitHub Actions how a run stopped, when runr runs as a
// workflow step (GITHUB_ACTIONS set): the run's report is appended to the
// job summary ($GITHUB_STEP_SUMMARY), run_id, stop_reason, exit_code and
// cost_usd to the step's outputs ($GITHUB_OUTPUT), and a stop that is not
// a success adds one ::error annotation on stderr. A file that cannot be
// written is a warning: the exit code is the run's.
func githubReport(io *IOStreams, store *state.Store, st *state.State) {
	if lookupEnv(io.Environ, "GITHUB_ACTIONS") == "" || st == nil || st.StopReason == nil {
		return
	}
	rep, err := report.Diagnose(st, store.RunDir(st.RunID))
	if err != nil {
		rep = nil
	}
	if path := lookupEnv(io.Environ, "GITHUB_STEP_SUMMARY"); path != "" {
		appendGitHubFile(io, "GITHUB_STEP_SUMMARY", path, githubSummary(st, rep))
	}
	if path := lookupEnv(io.Environ, "GITHUB_OUTPUT"); path != "" {
		appendGitHubFile(io, "GITHUB_OUTPUT", path, githubOutputs(st))
	}
	if line := githubAnnotation(st, rep); line != "" {
		fmt.Fprintln(io.Err, line)
	}
}

// appendGitHubFile appends text to one of the runner's files. The name
// comes from the environment, so it is opened without following a symlink
// at its end and must be a regular file: a FIFO or a device is refused
// rather than blocking the step or writing elsewhere.
func appendGitHubFile(io *IOStreams, variable, path, text string) {
	warn := func(err error) {
		fmt.Fprintf(io.Err, "runr: warning: %s: cannot append to %s: %s\n", variable, shownPath(path), termtext.VisibleLine(err.Error()))
	}
	fd, err := unix.Open(path, unix.O_WRONLY|unix.O_APPEND|unix.O_CREAT|unix.O_NOFOLLOW|unix.O_NONBLOCK|unix.O_CLOEXEC, 0o644)
	if err != nil {
		if err == unix.ELOOP {
			err = fmt.Errorf("it is a symbolic link, which runr does not follow")
		}
		warn(err)
		return
	}
	f := os.NewFile(uintptr(fd), path)
	defer f.Close()
	if fi, err := f.Stat(); err != nil {
		warn(err)
		return
	} else if !fi.Mode().IsRegular() {
		warn(fmt.Errorf("it is not a regular file"))
		return
	}
	if _, err := f.WriteString(text); err != nil {
		warn(err)
	}
}

// githubOutputs are the step's outputs as GitHub's name=value lines. A
// value that could end its line (a newline or a carriage return) takes the
// name<<DELIMITER form with a random delimiter it does not contain, so no
// value, whatever wrote it, adds an output of its own.
func githubOutputs(st *state.State) string {
	var b strings.Builder
	for _, kv := range [][2]string{
		{"run_id", st.RunID},
		{"stop_reason", string(st.StopReason.Code)},
		{"exit_code", strconv.Itoa(st.StopReason.ExitCode)},
		{"cost_usd", formatCost(st.Usage.CostUSD)},
	} {
		writeGitHubOutput(&b, kv[0], kv[1])
	}
	return b.String()
}

func writeGitHubOutput(b *strings.Builder, name, value string) {
	if !strings.ContainsAny(value, "\r\n") {
		fmt.Fprintf(b, "%s=%s\n", name, value)
		return
	}
	delim := githubDelimiter()
	for strings.Contains(value, delim) {
		delim = githubDelimiter()
	}
	fmt.Fprintf(b, "%s<<%s\n%s\n%s\n", name, delim, value, delim)
}

func githubDelimiter() string {
	buf := make([]byte, 16)
	_, _ = rand.Read(buf) // crypto/rand.Read never fails (Go 1.24+)
	return "ghadelimiter_" + hex.EncodeToString(buf)
}

// formatCost is the run's cost in USD as a plain number, to a millionth of
// a dollar (no float noise such as 0.30000000000000004).
func formatCost(usd float64) string {
	return strconv.FormatFloat(math.Round(usd*1e6)/1e6, 'f', -1, 64)
}

// githubAnnotation is the ::error workflow command of a stop outside the
// success family, "" for a success. The text comes from the agent and the
// task: control characters are made visible, and the message and title are
// escaped as GitHub's workflow-command rules ask, so the line stays one
// command.
func githubAnnotation(st *state.State, rep *report.Report) string {
	r := st.StopReason
	reg, known := stopreasons.Lookup(r.Code)
	if known && reg.Family == stopreasons.FamilySuccess {
		return ""
	}
	title := fmt.Sprintf("runr: %s (exit %d)", r.Code, r.ExitCode)
	msg := fmt.Sprintf("run %s stopped: %s", st.RunID, r.Code)
	if known {
		msg += " · " + reg.Title
	}
	if rep != nil && rep.Diagnosis != "" {
		msg += ": " + rep.Diagnosis
	} else if r.Message != "" {
		msg += ": " + r.Message
	}
	return "::error title=" + escapeGitHubProperty(termtext.VisibleLine(title)) + "::" + escapeGitHubData(termtext.VisibleLine(msg))
}

// escapeGitHubData escapes a workflow command's message (the runner's
// escapeData: %, \r, \n).
func escapeGitHubData(s string) string {
	return strings.NewReplacer("%", "%25", "\r", "%0D", "\n", "%0A").Replace(s)
}

// escapeGitHubProperty escapes a workflow command's property value
// (escapeProperty: also : and ,).
func escapeGitHubProperty(s string) string {
	return strings.NewReplacer("%", "%25", "\r", "%0D", "\n", "%0A", ":", "%3A", ",", "%2C").Replace(s)
}

// githubSummary is the job summary's section for the run: outcome, stop
// reason, milestones, cost and what to do next, compact; report.md in the
// run directory has the rest.
func githubSummary(st *state.State, rep *report.Report) string {
	r := st.StopReason
	var b strings.Builder
	line := func(format string, args ...any) { fmt.Fprintf(&b, format+"\n", args...) }
	title := string(r.Code)
	if reg, ok := stopreasons.Lookup(r.Code); ok {
		title = reg.Title
	}
	mark := "❌"
	if r.Code == stopreasons.Complete {
		mark = "✅"
	}
	s := st.Statistics
	line("### %s runr run `%s`: %s · %s", mark, mdCode(st.RunID), mdCode(string(r.Code)), mdText(title))
	line("")
	line("| | |")
	line("|---|---|")
	line("| outcome | %s · %s |", mdText(r.TerminalStatus), mdText(r.Category))
	line("| stop reason | `%s`: %s (exit code %d) |", mdCode(string(r.Code)), mdText(title), r.ExitCode)
	line("| milestones | %d approved of %d |", s.Approved, s.TotalMilestones)
	line("| cost | $%.2f |", st.Usage.CostUSD)
	line("| elapsed | %s · %s · %s |", stopreasons.Duration(time.Duration(st.ElapsedMS)*time.Millisecond),
		stopreasons.Plural(st.Tick, "tick"), stopreasons.Plural(st.Iteration, "iteration"))
	if st.Branch != "" {
		line("| branch | `%s` |", mdCode(st.Branch))
	}
	if rep != nil && rep.Diagnosis != "" {
		line("")
		line("%s", mdText(rep.Diagnosis))
	} else if r.Message != "" {
		line("")
		line("%s", mdText(r.Message))
	}
	if rep != nil && len(rep.Milestones) > 0 {
		line("")
		for _, m := range rep.Milestones {
			box := " "
			if m.Status == state.MilestoneApproved {
				box = "x"
			}
			line("- [%s] %s (%s, %s)", box, mdText(m.Goal), mdText(m.Status), stopreasons.Plural(m.Attempts, "attempt"))
		}
	}
	if rep != nil && len(rep.NextActions) > 0 {
		line("")
		line("Next:")
		line("")
		line("```sh")
		for _, a := range rep.NextActions {
			line("%s", strings.ReplaceAll(termtext.VisibleLine(a), "```", "'''"))
		}
		line("```")
	}
	line("")
	return b.String()
}

// mdText keeps text from the agent or the task on one line of markdown
// that opens no HTML and no table cell.
func mdText(s string) string {
	return strings.NewReplacer("<", "&lt;", "|", `\|`).Replace(termtext.VisibleLine(s))
}

func mdCode(s string) string { return strings.ReplaceAll(termtext.VisibleLine(s), "`", "'") }
