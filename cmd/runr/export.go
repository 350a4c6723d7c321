package main

import (
	"cmp"
	"context"
	"fmt"
	"os"
	"path/filepath"
	"slices"
	"strings"

	"github.com/spf13/cobra"

	"github.com/runr-dev/runr/internal/guard"
	"github.com/runr-dev/runr/internal/state"
	"github.com/runr-dev/runr/internal/stopreasons"
	"github.com/runr-dev/runr/internal/termtext"
)

// Formats of `runr export --format`.
const (
	exportPatch  = "patch"
	exportBundle = "bundle"
	exportDiff   = "diff"
)

var exportFormats = []string{exportPatch, exportBundle, exportDiff}

// ExportOptions are the parsed arguments of `runr export`.
type ExportOptions struct {
	IO     *IOStreams
	Store  func() (*state.Store, error)
	Ref    string
	Format string // "": patch when the run has commits, else diff
	Output string // "": stdout
}

// NewCmdExport builds `runr export`; runF, when a test passes one, gets the
// parsed options instead of exportRun.
func NewCmdExport(f *Factory, runF func(*ExportOptions) error) *cobra.Command {
	opts := &ExportOptions{IO: f.IO, Store: f.StoreRead}
	cmd := &cobra.Command{
		Use:   "export <id|latest> [--format patch|bundle|diff] [-o FILE]",
		Short: "Write a run's result: its commits as patches, its branch as a bundle, or its uncommitted diff",
		Long: `Write the result of a run, for CI and review, from the run's records and git:

  patch   its checkpoint commits since it started, as a series 'git am' applies
          (the default when it has any)
  bundle  its branch (runr/<id>) with those commits, for 'git fetch FILE runr/<id>'
  diff    its uncommitted changes, as a patch 'git apply' applies (the default
          otherwise)

To stdout, or to FILE with -o. A parallel run's result is its integration
branch. A run with no changes writes nothing, says so on stderr and exits 0.
Git is read through runr's own settings, never the repository's config, so
nothing the agent wrote into .git shapes the export.`,
		Example: `  runr export latest > run.patch && git am run.patch
  runr export 20260115-0300-ab12 --format bundle -o run.bundle
  runr export latest --format diff | git apply`,
		Args: cobra.ExactArgs(1),
		RunE: func(cmd *cobra.Command, args []string) error {
			opts.Ref = args[0]
			if opts.Format != "" && !slices.Contains(exportFormats, opts.Format) {
				return stopreasons.Errorf(stopreasons.UsageError, "--format %s: no such format (formats: %s)",
					termtext.VisibleLine(opts.Format), strings.Join(exportFormats, ", "))
			}
			if runF != nil {
				return runF(opts)
			}
			return exportRun(opts)
		},
	}
	cmd.Flags().StringVar(&opts.Format, "format", "", "patch, bundle or diff (default: patch when the run has commits, else diff)")
	cmd.Flags().StringVarP(&opts.Output, "output", "o", "", "write to this file instead of stdout")
	return cmd
}

// runResult is where a run's result lies in git.
type runResult struct {
	base    string   // HEAD when the run started
	tip     string   // the run's last checkpoint commit, or base
	commits []string // base..tip, oldest first
	branch  string   // the run's branch, also the bundle's
	workDir string   // the work tree whose uncommitted changes are the run's ("" when gone)
}

func exportRun(opts *ExportOptions) error {
	store, err := opts.Store()
	if err != nil {
		return err
	}
	st, err := loadRun(store, opts.Ref)
	if err != nil {
		return err
	}
	if st.Fingerprint.GitHead == "" && (st.Parallel == nil || st.Parallel.Base == "") {
		// Stopped before its first tick (a dirty checkout, a missing
		// program): it recorded no start, and changed nothing.
		fmt.Fprintf(opts.IO.Err, "runr export: run %s stopped before it started work: nothing written\n", st.RunID)
		return nil
	}
	ctx := context.Background()
	ex, err := guard.NewExporter(ctx, st.Repo)
	if err != nil {
		return stopreasons.Wrap(stopreasons.EnvironmentInvalid, err, "run %s: read its repository %s", st.RunID, st.Repo)
	}
	defer ex.Close()
	res, err := locateResult(ctx, store, st, ex)
	if err != nil {
		return err
	}

	format := opts.Format
	if format == "" {
		format = exportDiff
		if len(res.commits) > 0 {
			format = exportPatch
		}
	}
	var data []byte
	switch format {
	case exportPatch, exportBundle:
		if len(res.commits) == 0 {
			fmt.Fprintf(opts.IO.Err, "runr export: run %s has no commits since it started (%s): nothing written\n", st.RunID, short(res.base))
			return nil
		}
		if format == exportPatch {
			data, err = ex.Patch(ctx, res.base, res.tip)
		} else {
			data, err = bundle(ctx, ex, res)
		}
	case exportDiff:
		data, err = uncommitted(ctx, store, st, ex, res)
		if err == nil && len(data) == 0 {
			fmt.Fprintf(opts.IO.Err, "runr export: run %s has no uncommitted changes: nothing written\n", st.RunID)
			return nil
		}
	}
	if err != nil {
		return stopreasons.Wrap(stopreasons.EnvironmentInvalid, err, "run %s: export its %s", st.RunID, format)
	}
	if opts.Output == "" {
		_, err = opts.IO.Out.Write(data)
		return err
	}
	if err := writeFileAtomic(opts.Output, data); err != nil {
		return stopreasons.Wrap(stopreasons.EnvironmentInvalid, err, "-o %s", termtext.VisibleLine(opts.Output))
	}
	fmt.Fprintf(opts.IO.Err, "runr export: wrote the %s of run %s to %s\n", format, st.RunID, termtext.VisibleLine(opts.Output))
	return nil
}

// locateResult finds the run's result from its records: the commit it
// started from and its checkpoint commits (never the agent-writable refs).
func locateResult(ctx context.Context, store *state.Store, st *state.State, ex *guard.Exporter) (runResult, error) {
	res := runResult{base: st.Fingerprint.GitHead, branch: cmp.Or(st.Branch, guard.RunBranch(st.RunID))}
	if st.Parallel != nil {
		res.base = st.Parallel.Base
	}
	if res.base == "" {
		return res, stopreasons.Errorf(stopreasons.StateCorrupt, "run %s: its state.json does not record the commit it started from (run %s before its first tick?)", st.RunID, st.RunID)
	}
	// The run's checkpoint commits, and for a sequential run the head the
	// guards last judged from: the tip is the one every other descends from.
	candidates := []string{res.base}
	if st.Parallel == nil && st.GuardHead != "" {
		candidates = append(candidates, st.GuardHead)
	}
	for _, m := range st.Milestones {
		if m.Commit != "" {
			candidates = append(candidates, m.Commit)
		}
	}
	tip, err := ex.Tip(ctx, candidates)
	if err != nil {
		return res, stopreasons.Wrap(stopreasons.StateCorrupt, err, "run %s: its checkpoint commits", st.RunID)
	}
	res.tip = tip
	if res.commits, err = ex.Commits(ctx, res.base, res.tip); err != nil {
		return res, stopreasons.Wrap(stopreasons.EnvironmentInvalid, err, "run %s", st.RunID)
	}
	res.workDir = st.Repo
	if st.Worktree != "" {
		res.workDir = st.Worktree
	} else if st.Flags.Worktree || st.Parallel != nil {
		res.workDir = "" // removed when the run ended
	}
	if res.workDir != "" {
		if fi, err := os.Stat(res.workDir); err != nil || !fi.IsDir() {
			res.workDir = ""
		}
	}
	return res, nil
}

// bundle is the bundle of the run's branch, made in a temporary file.
func bundle(ctx context.Context, ex *guard.Exporter, res runResult) ([]byte, error) {
	dir, err := os.MkdirTemp("", "runr-bundle-")
	if err != nil {
		return nil, err
	}
	defer os.RemoveAll(dir)
	file := filepath.Join(dir, "run.bundle")
	if err := ex.Bundle(ctx, res.base, res.tip, res.branch, file); err != nil {
		return nil, err
	}
	return os.ReadFile(file)
}

// uncommitted is the diff of the paths the run changed in its work tree
// and has not committed, from its last checkpoint commit.
func uncommitted(ctx context.Context, store *state.Store, st *state.State, ex *guard.Exporter, res runResult) ([]byte, error) {
	if res.workDir == "" {
		return nil, nil
	}
	// The git dirs recorded when the run started: a linked worktree's .git
	// file is the agent's to rewrite.
	if data, err := store.ReadRunFile(st.RunID, guard.SnapshotFile); err == nil {
		if snap, err := guard.DecodeSnapshot(data); err == nil {
			snap.Pin(res.workDir)
		}
	}
	paths, err := guard.ChangedSince(ctx, res.workDir, guard.Baseline(st.Baseline))
	if err != nil || len(paths) == 0 {
		return nil, err
	}
	tree, err := guard.TreeHash(ctx, res.workDir)
	if err != nil {
		return nil, err
	}
	return ex.Diff(ctx, res.tip, tree, paths)
}

// writeFileAtomic writes data to path through a temporary file beside it,
// so a reader never sees half an export.
func writeFileAtomic(path string, data []byte) error {
	f, err := os.CreateTemp(filepath.Dir(path), "."+filepath.Base(path)+".tmp-")
	if err != nil {
		return err
	}
	_, err = f.Write(data)
	if cerr := f.Close(); err == nil {
		err = cerr
	}
	if err == nil {
		err = os.Chmod(f.Name(), 0o644)
	}
	if err == nil {
		err = os.Rename(f.Name(), path)
	}
	if err != nil {
		os.Remove(f.Name())
	}
	return err
}

func short(sha string) string {
	if len(sha) > 12 {
		return sha[:12]
	}
	return sha
}
