package main

import (
	"bytes"
	"encoding/json"
	"fmt"
	"io"
	"slices"
	"strconv"
	"strings"
	"text/tabwriter"

	"github.com/spf13/cobra"

	"github.com/runr-dev/runr/internal/stopreasons"
	"github.com/runr-dev/runr/internal/termtext"
)

// ReasonsOptions are the parsed arguments of `runr reasons`.
type ReasonsOptions struct {
	IO     *IOStreams
	Code   string
	Family string
	// Format is one of ReasonsFormats; --json and --markdown are its aliases.
	Format    string
	JSON      bool
	Markdown  bool
	Container string
}

// NewCmdReasons builds `runr reasons`; runF, when a test passes one, gets
// the parsed options instead of reasonsRun.
func NewCmdReasons(f *Factory, runF func(*ReasonsOptions) error) *cobra.Command {
	opts := &ReasonsOptions{IO: f.IO}
	cmd := &cobra.Command{
		Use:   "reasons [CODE|EXIT] [--format FORMAT]",
		Short: "List every stop reason with its exit code, or explain one",
		Long: `List every stop reason runr can stop with: its code, exit code, family,
category, whether --auto-resume retries it, and its title. With a CODE (e.g.
timeout) or an exit code (e.g. 124), print that reason in full with its
diagnosis and next actions.

--format prints the registry for another reader: table (the default), json,
markdown (docs/stop-reasons.md), k8s-pod-failure-policy (a Kubernetes Job's
podFailurePolicy: auto-resumable exit codes Count, the other non-zero ones
FailJob, a pod disruption Ignore) or github (a sh case on runr's exit code
for a workflow step). --json and --markdown are short for --format json and
--format markdown.`,
		Example: `  runr reasons
  runr reasons timeout
  runr reasons 124
  runr reasons --format k8s-pod-failure-policy --container agent
  runr reasons --format github > runr-exit.sh`,
		Args: cobra.MaximumNArgs(1),
		RunE: func(cmd *cobra.Command, args []string) error {
			if len(args) == 1 {
				opts.Code = args[0]
			}
			if runF != nil {
				return runF(opts)
			}
			return reasonsRun(opts)
		},
	}
	fl := cmd.Flags()
	fl.StringVar(&opts.Family, "family", "", "only the reasons of this family")
	fl.StringVar(&opts.Format, "format", FormatTable, "output format: "+strings.Join(ReasonsFormats, ", "))
	fl.BoolVar(&opts.JSON, "json", false, "print the registry as a JSON array (--format json)")
	fl.BoolVar(&opts.Markdown, "markdown", false, "print docs/stop-reasons.md (--format markdown)")
	fl.StringVar(&opts.Container, "container", defaultK8sContainer, "k8s-pod-failure-policy(-indexed): the name of runr's container in the pod")
	return cmd
}

// reasonsFormat settles --format with its aliases --json and --markdown.
func reasonsFormat(opts *ReasonsOptions) (string, error) {
	format := opts.Format
	if !slices.Contains(ReasonsFormats, format) {
		return "", stopreasons.Errorf(stopreasons.UsageError, "--format %s: no such format (formats: %s)", format, strings.Join(ReasonsFormats, ", "))
	}
	if opts.JSON && opts.Markdown {
		return "", stopreasons.Errorf(stopreasons.UsageError, "--json and --markdown cannot be used together")
	}
	for _, alias := range []struct {
		set    bool
		flag   string
		format string
	}{{opts.JSON, "--json", FormatJSON}, {opts.Markdown, "--markdown", FormatMarkdown}} {
		if !alias.set {
			continue
		}
		if format != FormatTable && format != alias.format {
			return "", stopreasons.Errorf(stopreasons.UsageError, "%s is --format %s and cannot be used with --format %s", alias.flag, alias.format, format)
		}
		format = alias.format
	}
	return format, nil
}

func reasonsRun(opts *ReasonsOptions) error {
	format, err := reasonsFormat(opts)
	if err != nil {
		return err
	}
	k8s := format == FormatK8sPodFailurePolicy || format == FormatK8sPodFailurePolicyIndexed
	if opts.Container != defaultK8sContainer && !k8s {
		return stopreasons.Errorf(stopreasons.UsageError, "--container goes with --format %s or %s only", FormatK8sPodFailurePolicy, FormatK8sPodFailurePolicyIndexed)
	}
	switch format {
	case FormatMarkdown, FormatK8sPodFailurePolicy, FormatK8sPodFailurePolicyIndexed, FormatGitHub:
		// A policy or a script that covered part of the registry would
		// treat the codes it left out as Kubernetes's or the shell's default.
		if opts.Code != "" || opts.Family != "" {
			return stopreasons.Errorf(stopreasons.UsageError, "--format %s covers the whole registry: it takes no CODE or --family", format)
		}
	}
	switch format {
	case FormatMarkdown:
		_, err := io.WriteString(opts.IO.Out, ReasonsMarkdown())
		return err
	case FormatK8sPodFailurePolicy, FormatK8sPodFailurePolicyIndexed:
		policy, err := K8sPodFailurePolicy(stopreasons.All(), opts.Container, format == FormatK8sPodFailurePolicyIndexed)
		if err != nil {
			return err
		}
		_, err = io.WriteString(opts.IO.Out, policy)
		return err
	case FormatGitHub:
		_, err := io.WriteString(opts.IO.Out, GitHubCaseSnippet(stopreasons.All()))
		return err
	}
	rows := stopreasons.All()
	if opts.Family != "" {
		rows = stopreasons.ByFamily(stopreasons.Family(opts.Family))
		if len(rows) == 0 {
			var names []string
			for _, f := range stopreasons.Families {
				names = append(names, string(f.Family))
			}
			return stopreasons.Errorf(stopreasons.UsageError, "--family %s: no such family (families: %s)", opts.Family, strings.Join(names, ", "))
		}
	}
	if opts.Code != "" {
		r, ok, err := findReason(opts.Code)
		if err != nil {
			return err
		}
		if !ok {
			msg := fmt.Sprintf("no stop reason %q", opts.Code)
			if near := closestCodes(opts.Code); len(near) > 0 {
				msg += "; did you mean " + strings.Join(near, ", ") + "?"
			}
			return stopreasons.Errorf(stopreasons.UsageError, "%s (run 'runr reasons' for the list)", msg)
		}
		rows = []stopreasons.Reason{r}
	}
	if format == FormatJSON {
		return writeJSON(opts.IO.Out, rows)
	}
	if opts.Code != "" {
		return writeReasonDetail(opts.IO, rows[0])
	}
	return writeReasonsTable(opts.IO, rows)
}

// findReason looks a reason up by its code or, for a number, by its exit
// code; a number that is no reason's exit code is a usage error that says so.
func findReason(arg string) (stopreasons.Reason, bool, error) {
	n, err := strconv.Atoi(arg)
	if err != nil {
		r, ok := stopreasons.Lookup(stopreasons.Code(arg))
		return r, ok, nil
	}
	for _, r := range stopreasons.All() {
		if r.ExitCode == n {
			return r, true, nil
		}
	}
	msg := fmt.Sprintf("no stop reason exits with %d: runr exits only with the codes 'runr reasons' lists, and a script must treat any other as a failure", n)
	if n > 128 && n < 160 {
		// 130 and 143 are runr's own and found above; the others are how a
		// shell reports a process ended by a signal.
		msg += fmt.Sprintf("; %d is how a shell reports a process killed by signal %d", n, n-128)
		if n == 137 {
			msg += " (SIGKILL): a run whose runr was killed so shows as crashed in 'runr status' and continues with 'runr resume'"
		}
	}
	return stopreasons.Reason{}, false, stopreasons.Errorf(stopreasons.UsageError, "%s", msg)
}

func writeJSON(w io.Writer, v any) error {
	var b bytes.Buffer
	enc := json.NewEncoder(&b)
	enc.SetIndent("", "  ")
	enc.SetEscapeHTML(false)
	if err := enc.Encode(v); err != nil {
		return err
	}
	_, err := w.Write(termtext.VisibleJSON(b.Bytes()))
	return err
}

func categoryPaint(p Painter, c stopreasons.Category, s string) string {
	switch c {
	case stopreasons.CategoryCompleted:
		return p.Green(s)
	case stopreasons.CategoryGuardrail:
		return p.Yellow(s)
	default:
		return p.Red(s)
	}
}

func yesNo(b bool) string {
	if b {
		return "yes"
	}
	return "no"
}

func writeReasonsTable(io *IOStreams, rows []stopreasons.Reason) error {
	p := io.OutPainter()
	tw := tabwriter.NewWriter(io.Out, 0, 0, 2, ' ', 0)
	fmt.Fprintln(tw, "CODE\tEXIT\tFAMILY\tCATEGORY\tAUTO-RESUME\tTITLE")
	for _, r := range rows {
		// Colour goes on the last column only: escape codes in a middle
		// column would throw tabwriter's widths off.
		fmt.Fprintf(tw, "%s\t%d\t%s\t%s\t%s\t%s\n", r.Code, r.ExitCode, r.Family, r.Category, yesNo(r.AutoResumable), categoryPaint(p, r.Category, r.Title))
	}
	return tw.Flush()
}

func writeReasonDetail(io *IOStreams, r stopreasons.Reason) error {
	p := io.OutPainter()
	w := io.Out
	fmt.Fprintf(w, "%s  %s\n\n", p.Bold(string(r.Code)), categoryPaint(p, r.Category, r.Title))
	fmt.Fprintf(w, "  exit code      %d\n", r.ExitCode)
	fmt.Fprintf(w, "  family         %s\n", r.Family)
	fmt.Fprintf(w, "  category       %s\n", r.Category)
	fmt.Fprintf(w, "  auto-resume    %s\n", yesNo(r.AutoResumable))
	fmt.Fprintf(w, "  when           %s\n\n", r.When)
	diagnosis, actions := r.Explain()
	fmt.Fprintf(w, "Diagnosis ('runr doctor' fills in the run's own figures):\n  %s\n\n", diagnosis)
	fmt.Fprintln(w, "Next actions:")
	for _, a := range actions {
		if stopreasons.IsCommand(a) {
			fmt.Fprintf(w, "  $ %s\n", a)
		} else {
			fmt.Fprintf(w, "  - %s\n", a)
		}
	}
	return nil
}

// ReasonsMarkdown renders docs/stop-reasons.md from the registry.
func ReasonsMarkdown() string {
	var b strings.Builder
	b.WriteString(`# Stop reasons and exit codes

<!-- Generated from internal/stopreasons by 'make docs' (runr reasons --markdown). Do not edit by hand. -->

Every run of runr stops with exactly one reason from this table, and every
runr command exits with the exit code of its reason and no other code.
'runr reasons' prints this table; 'runr reasons CODE' explains one reason.

## Reasons

| code | exit | family | category | auto-resume | title | when |
|---|---|---|---|---|---|---|
`)
	for _, r := range stopreasons.All() {
		fmt.Fprintf(&b, "| `%s` | %d | %s | %s | %s | %s | %s |\n", r.Code, r.ExitCode, r.Family, r.Category, yesNo(r.AutoResumable), r.Title, strings.ReplaceAll(r.When, "|", `\|`))
	}
	b.WriteString(`
## Families and their exit-code ranges

| family | exit codes | meaning |
|---|---|---|
`)
	for _, f := range stopreasons.Families {
		fmt.Fprintf(&b, "| %s | %s | %s |\n", f.Family, f.Exits, f.Meaning)
	}
	b.WriteString(`
## For scripts

- Exit codes 2–6, 10–16, 20–21, 30–35, 40–43, 124–130 and 143 are the contract
  with CI scripts; 64–78 follow sysexits.h. Codes are stable: a reason is never
  renamed and an exit code never reused.
- **Treat an unknown exit code as a failure.** A newer runr may add reasons.
- runr's 126 (` + "`stalled`" + `) and 127 (` + "`budget_exceeded`" + `) are not the shell's
  "cannot execute" and "command not found": a missing agent program is
  ` + "`worker_not_found`" + ` (35).
- A runr killed with SIGKILL exits 137, set by the kernel, not by runr. It
  leaves a run that 'runr status' shows as ` + "`crashed`" + `; 'runr resume' continues it.
- Terminal status, derived from the reason: ` + "`done_success`" + ` (family success),
  ` + "`aborted_constraint`" + ` (constraint), ` + "`aborted_error`" + ` (category error),
  ` + "`aborted_user`" + ` (family user), and for the other guardrails ` + "`done_partial`" + `
  when at least one milestone was approved, else ` + "`aborted_stuck`" + `.
- A reason code read from a state.json that this runr does not know gets a
  generic diagnosis and exit code 1.

Example:

` + "```sh" + `
runr run --time 30m
case $? in
  0)       echo "done" ;;
  124|125) echo "out of budget; resume later" ;;
  32|33|126|143) runr resume latest --auto-resume ;;
  *)       echo "needs a person: runr doctor latest"; exit 1 ;;
esac
` + "```" + `

## Adding a reason

1. Add a constant and a row to the table in internal/stopreasons (code, title,
   family, an unused exit code in the family's range, category, auto-resume,
   when, diagnosis template, next actions).
2. Pin it in internal/stopreasons/registry_test.go.
3. Run 'make docs' to regenerate this file; a test fails while it differs.
`)
	return b.String()
}
