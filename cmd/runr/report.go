package main

import (
	"bufio"
	"cmp"
	"encoding/csv"
	"fmt"
	"io"
	"os"
	"path/filepath"
	"slices"
	"strconv"
	"strings"
	"text/tabwriter"
	"time"

	"github.com/spf13/cobra"

	"github.com/runr-dev/runr/internal/state"
	"github.com/runr-dev/runr/internal/stopreasons"
	"github.com/runr-dev/runr/internal/termtext"
)

// Formats of `runr report --format`.
const (
	reportTable    = "table"
	reportJSON     = "json"
	reportCSV      = "csv"
	reportMarkdown = "markdown"
)

var reportFormats = []string{reportTable, reportJSON, reportCSV, reportMarkdown}

// ReportOptions are the parsed arguments of `runr report`.
type ReportOptions struct {
	IO    *IOStreams
	Store func() (*state.Store, error)
	Now   func() time.Time

	Since  time.Duration // 0: all runs
	By     string        // "" or one of state.ReportGroupings
	Format string
	// Stores are --store's values, globs as given; none: the one store
	// Store opens.
	Stores []string
}

// NewCmdReport builds `runr report`; runF, when a test passes one, gets the
// parsed options instead of reportRun.
func NewCmdReport(f *Factory, runF func(*ReportOptions) error) *cobra.Command {
	opts := &ReportOptions{IO: f.IO, Store: f.StoreRead, Now: time.Now}
	var since string
	cmd := &cobra.Command{
		Use:   "report [--since D] [--by model|agent|reason|day] [--format table|json|csv|markdown] [--store DIR]...",
		Short: "Sum up the runs of the store: outcomes, tokens, cost, time",
		Long: `Sum up all runs of the store (or those created within --since, e.g. 7d,
36h, 1d12h): runs, the share that completed, stop reasons with their counts,
milestones approved, tokens by type, cost, elapsed time and cost per approved
milestone. --by groups the runs: by the models of their agent calls (a run
counts under each model it used, with that model's own tokens and cost), by
agent, by stop reason, or by the day (UTC) they were created. It reads what
runr status reads: the head of each run's state.json, which also holds the
scoreboard's figures: approved milestones credited to the agent and model of the
attempt approved, the share approved on their first attempt, cost and tokens
per approved milestone, and the spend on milestones not approved.

--store DIR (repeatable; a glob is expanded) reads the runs of several stores
as one report: a CI matrix's downloaded artifacts, an Indexed Job's per-index
stores on a volume. DIR is a run store (the directory holding runs/) or a
checkout whose .git/runr is one.

--format table (the default) is for people; json (one object), csv and
markdown are for other programs and pages.`,
		Example: `  runr report
  runr report --since 7d --by model
  runr report --by day --format csv > runs.csv
  runr report --by model --store 'artifacts/*/runr'`,
		Args: cobra.NoArgs,
		RunE: func(cmd *cobra.Command, args []string) error {
			if cmd.Flags().Lookup("since").Changed {
				d, err := parseAge(since)
				if err != nil {
					return stopreasons.Errorf(stopreasons.UsageError, "--since %q: %v (e.g. 7d, 36h, 1d12h)", termtext.VisibleLine(since), err)
				}
				opts.Since = d
			}
			if opts.By != "" && !slices.Contains(state.ReportGroupings, opts.By) {
				return stopreasons.Errorf(stopreasons.UsageError, "--by %s: no such grouping (groupings: %s)",
					termtext.VisibleLine(opts.By), strings.Join(state.ReportGroupings, ", "))
			}
			if !slices.Contains(reportFormats, opts.Format) {
				return stopreasons.Errorf(stopreasons.UsageError, "--format %s: no such format (formats: %s)",
					termtext.VisibleLine(opts.Format), strings.Join(reportFormats, ", "))
			}
			if runF != nil {
				return runF(opts)
			}
			return reportRun(opts)
		},
	}
	fl := cmd.Flags()
	fl.Var(&typedFlag{value: &since, kind: "duration"}, "since", "only the runs created within this time: 7d, 36h, 1d12h (default: all)")
	fl.StringVar(&opts.By, "by", "", "a row per group: "+strings.Join(state.ReportGroupings, ", "))
	fl.StringVar(&opts.Format, "format", reportTable, "output format: "+strings.Join(reportFormats, ", "))
	fl.StringArrayVar(&opts.Stores, "store", nil, "read the runs of this run store too (repeatable; globs): one report over all of them")
	return cmd
}

// reportRun reads the summary of each run (the head of its state.json, as
// status does, with its scores), of one store or of every --store, and
// writes the report.
func reportRun(opts *ReportOptions) error {
	stores, err := reportStores(opts)
	if err != nil {
		return err
	}
	var since time.Time
	if opts.Since > 0 {
		since = opts.Now().Add(-opts.Since)
	}
	var sums []*state.Summary
	unreadable := 0
	for _, store := range stores {
		s, bad, err := storeSummaries(store, since)
		if err != nil {
			return err
		}
		sums, unreadable = append(sums, s...), unreadable+bad
	}
	// One order whatever the stores: the report of several stores is that
	// of one store holding all their runs, sums added in the same order.
	slices.SortStableFunc(sums, func(a, b *state.Summary) int {
		return cmp.Or(a.CreatedAt.Compare(b.CreatedAt), strings.Compare(a.RunID, b.RunID))
	})
	if unreadable > 0 {
		fmt.Fprintf(opts.IO.Err, "runr report: %s unreadable and left out (runr status lists them)\n", stopreasons.Plural(unreadable, "run"))
	}
	rep := state.BuildReport(sums, opts.By)
	if !since.IsZero() {
		s := since.UTC().Truncate(time.Second)
		rep.Since = &s
	}
	out := bufio.NewWriterSize(opts.IO.Out, 64<<10)
	switch opts.Format {
	case reportJSON:
		err = writeJSON(out, rep)
	case reportCSV:
		err = writeReportCSV(out, rep)
	case reportMarkdown:
		writeReportMarkdown(out, rep)
	default:
		err = writeReportTable(out, rep)
	}
	if err != nil {
		return err
	}
	return out.Flush()
}

// storeSummaries reads the summaries of the runs of store created at or
// after since (zero: all), and counts those it could not read.
func storeSummaries(store *state.Store, since time.Time) ([]*state.Summary, int, error) {
	ids, err := store.List()
	if err != nil {
		return nil, 0, err
	}
	var sums []*state.Summary
	unreadable := 0
	for _, id := range ids {
		sum, err := store.Summary(id)
		if err != nil {
			unreadable++
			continue
		}
		if !since.IsZero() && sum.CreatedAt.Before(since) {
			continue
		}
		sum.RunStatus = store.LiveStatus(sum.RunID, sum.RunStatus)
		sums = append(sums, sum)
	}
	return sums, unreadable, nil
}

// reportStores opens the stores the report reads: each --store (a glob,
// expanded; a checkout stands for its .git/runr), each once, or else the
// store of the command line.
func reportStores(opts *ReportOptions) ([]*state.Store, error) {
	if len(opts.Stores) == 0 {
		store, err := opts.Store()
		if err != nil {
			return nil, err
		}
		return []*state.Store{store}, nil
	}
	var stores []*state.Store
	seen := map[string]bool{}
	for _, pattern := range opts.Stores {
		dirs, err := filepath.Glob(pattern)
		if err != nil {
			return nil, stopreasons.Errorf(stopreasons.UsageError, "--store %s: not a valid glob: %v", termtext.VisibleLine(pattern), err)
		}
		if len(dirs) == 0 {
			return nil, stopreasons.Errorf(stopreasons.UsageError, "--store %s: no such directory", termtext.VisibleLine(pattern))
		}
		for _, dir := range dirs {
			home, err := storeHome(dir)
			if err != nil {
				return nil, err
			}
			if seen[home] {
				continue
			}
			seen[home] = true
			store, err := state.OpenRead(home)
			if err != nil {
				return nil, err
			}
			stores = append(stores, store)
		}
	}
	return stores, nil
}

// storeHome is the run store dir stands for: itself when it holds runs/,
// else its .git/runr, as an absolute path.
func storeHome(dir string) (string, error) {
	abs, err := filepath.Abs(dir)
	if err != nil {
		return "", stopreasons.Wrap(stopreasons.UsageError, err, "--store %s", termtext.VisibleLine(dir))
	}
	for _, home := range []string{abs, state.DefaultHome(filepath.Join(abs, ".git"))} {
		if fi, err := os.Stat(filepath.Join(home, "runs")); err == nil && fi.IsDir() {
			return home, nil
		}
	}
	return "", stopreasons.Errorf(stopreasons.UsageError, "--store %s: not a run store (no runs/ directory in it, nor in its .git/runr); give the directory that holds runs/", termtext.VisibleLine(dir))
}

// reportColumns are the columns of the table, csv and markdown forms, after
// the group's key.
var reportColumns = []string{"runs", "completed", "stop_reasons", "milestones_approved", "milestones_total",
	"calls", "input_tokens", "cache_read_tokens", "cache_write_tokens", "output_tokens",
	"cost_usd", "cost_source", "elapsed_ms", "cost_per_approved_milestone_usd",
	"approved", "first_attempt_rate", "cost_per_approved_usd", "tokens_per_approved", "unapproved_cost_usd"}

// reportRows are the rows a form lists: the groups, or all runs without a
// grouping.
func reportRows(rep state.Report) []state.ReportRow {
	if rep.By == "" {
		return []state.ReportRow{rep.Total}
	}
	return rep.Rows
}

// keyHeader is the name of the first column.
func keyHeader(rep state.Report) string {
	if rep.By == "" {
		return "runs_of"
	}
	return rep.By
}

// csvRecord is row r as the csv form writes it: plain numbers, the stop
// reasons as code:n separated by semicolons, an empty cost per milestone
// without an approved milestone.
func csvRecord(r state.ReportRow) []string {
	reasons := make([]string, 0, len(r.StopReasons))
	for _, item := range r.StopReasonList() {
		code, n, _ := strings.Cut(item, " ")
		reasons = append(reasons, code+":"+n)
	}
	// The optional figures are empty without an approved milestone.
	per, first, costPer, tokensPer := "", "", "", ""
	if v := r.CostPerApprovedMilestoneUSD; v != nil {
		per = v.String()
	}
	if v := r.FirstAttemptRate; v != nil {
		first = v.String()
	}
	if v := r.CostPerApprovedUSD; v != nil {
		costPer = v.String()
	}
	if v := r.TokensPerApproved; v != nil {
		tokensPer = strconv.FormatFloat(*v, 'f', -1, 64)
	}
	i := strconv.Itoa
	i64 := func(v int64) string { return strconv.FormatInt(v, 10) }
	return []string{termtext.VisibleLine(r.Key), i(r.Runs), i(r.Completed), termtext.VisibleLine(strings.Join(reasons, ";")),
		i(r.MilestonesApproved), i(r.MilestonesTotal), i(r.Calls), i64(r.InputTokens), i64(r.CacheReadTokens),
		i64(r.CacheWriteTokens), i64(r.OutputTokens), r.CostUSD.String(), r.CostSource,
		i64(r.ElapsedMS), per,
		i(r.Approved), first, costPer, tokensPer, r.UnapprovedCostUSD.String()}
}

func writeReportCSV(w io.Writer, rep state.Report) error {
	cw := csv.NewWriter(w)
	if err := cw.Write(append([]string{keyHeader(rep)}, reportColumns...)); err != nil {
		return err
	}
	if rep.By == "" && rep.Total.Runs == 0 {
		cw.Flush()
		return cw.Error()
	}
	for _, r := range reportRows(rep) {
		if err := cw.Write(csvRecord(r)); err != nil {
			return err
		}
	}
	cw.Flush()
	return cw.Error()
}

// scoreboard reports whether the table and markdown forms show the
// scoreboard's columns: when rows are agents or models.
func scoreboard(rep state.Report) bool { return rep.By == state.ByAgent || rep.By == state.ByModel }

// scoreHeader names the scoreboard's columns of the table and markdown forms.
var scoreHeader = []string{"APPROVED", "FIRST TRY", "PER APPROVED", "TOKENS/APPROVED", "UNAPPROVED COST"}

// scoreCells are row r's scoreboard figures as the table and markdown show them.
func scoreCells(r state.ReportRow) []string {
	first, per, tokens := "-", "-", "-"
	if r.FirstAttemptRate != nil {
		first = r.FirstAttemptRate.Percent()
	}
	if r.CostPerApprovedUSD != nil {
		per = r.CostPerApprovedUSD.Human()
	}
	if r.TokensPerApproved != nil {
		tokens = reportCount(int64(*r.TokensPerApproved + 0.5))
	}
	return []string{strconv.Itoa(r.Approved), first, per, tokens, r.UnapprovedCostUSD.Human()}
}

// humanCells are row r as the table and markdown forms show it.
func humanCells(rep state.Report, r state.ReportRow) []string {
	cells := humanRow(r)
	if scoreboard(rep) {
		cells = append(cells[:len(cells)-1:len(cells)-1], append(scoreCells(r), cells[len(cells)-1])...)
	}
	return cells
}

// humanHeaders are the column names of the table and markdown forms, after
// the group's key.
func humanHeaders(rep state.Report) []string {
	if !scoreboard(rep) {
		return humanHeader
	}
	n := len(humanHeader)
	return slices.Concat(humanHeader[:n-1], scoreHeader, humanHeader[n-1:])
}

// humanRow is row r as the table and markdown forms show it.
func humanRow(r state.ReportRow) []string {
	share := "-"
	if r.Runs > 0 {
		share = fmt.Sprintf("%d (%s)", r.Completed, r.CompletedShare.Percent())
	}
	cost := r.CostUSD.Human()
	if r.CostSource != "" && r.CostSource != state.CostReported {
		cost += " " + r.CostSource
	}
	per := "-"
	if r.CostPerApprovedMilestoneUSD != nil {
		per = r.CostPerApprovedMilestoneUSD.Human()
	}
	return []string{termtext.VisibleLine(r.Key), strconv.Itoa(r.Runs), share,
		fmt.Sprintf("%d/%d", r.MilestonesApproved, r.MilestonesTotal), strconv.Itoa(r.Calls),
		reportCount(r.InputTokens), reportCount(r.CacheReadTokens), reportCount(r.CacheWriteTokens), reportCount(r.OutputTokens),
		cost, per, stopreasons.Duration(time.Duration(r.ElapsedMS) * time.Millisecond),
		termtext.VisibleLine(strings.Join(r.StopReasonList(), ", "))}
}

var humanHeader = []string{"RUNS", "COMPLETED", "MILESTONES", "CALLS", "INPUT", "CACHE READ", "CACHE WRITE", "OUTPUT",
	"COST", "PER MILESTONE", "ELAPSED", "STOP REASONS"}

func writeReportTable(w io.Writer, rep state.Report) error {
	if rep.Total.Runs == 0 {
		if rep.Since != nil {
			fmt.Fprintf(w, "No run created since %s.\n", rep.Since.Format(time.RFC3339))
		} else {
			fmt.Fprintln(w, "No runs yet. Start one with: runr run --task TASK.md -- AGENT...")
		}
		return nil
	}
	tw := tabwriter.NewWriter(w, 0, 0, 2, ' ', 0)
	fmt.Fprintln(tw, strings.ToUpper(strings.ReplaceAll(keyHeader(rep), "_", " "))+"\t"+strings.Join(humanHeaders(rep), "\t"))
	for _, r := range reportRows(rep) {
		fmt.Fprintln(tw, strings.Join(humanCells(rep, r), "\t"))
	}
	if rep.By != "" {
		total := humanCells(rep, rep.Total)
		total[0] = "TOTAL"
		fmt.Fprintln(tw, strings.Join(total, "\t"))
	}
	return tw.Flush()
}

func writeReportMarkdown(w io.Writer, rep state.Report) {
	if rep.Total.Runs == 0 {
		fmt.Fprintln(w, "No runs.")
		return
	}
	cell := func(s string) string { return strings.ReplaceAll(s, "|", `\|`) }
	header := append([]string{strings.ReplaceAll(keyHeader(rep), "_", " ")}, humanHeaders(rep)...)
	for i := range header {
		header[i] = strings.ToLower(header[i])
	}
	fmt.Fprintf(w, "| %s |\n|%s\n", strings.Join(header, " | "), strings.Repeat("---|", len(header)))
	rows := reportRows(rep)
	if rep.By != "" {
		total := rep.Total
		total.Key = "**total**"
		rows = append(rows, total)
	}
	for _, r := range rows {
		cells := humanCells(rep, r)
		for i := range cells {
			cells[i] = cell(cells[i])
		}
		fmt.Fprintf(w, "| %s |\n", strings.Join(cells, " | "))
	}
}

// reportCount is a token count with thousands separators.
func reportCount(n int64) string {
	s := strconv.FormatInt(n, 10)
	for i := len(s) - 3; i > 0; i -= 3 {
		s = s[:i] + "," + s[i:]
	}
	return s
}
