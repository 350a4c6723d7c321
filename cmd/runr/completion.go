package main

import (
	"bytes"
	"fmt"
	"io"
	"slices"
	"strconv"
	"strings"

	"github.com/spf13/cobra"

	"github.com/runr-dev/runr/internal/agents"
	"github.com/runr-dev/runr/internal/state"
	"github.com/runr-dev/runr/internal/stopreasons"
	"github.com/runr-dev/runr/internal/termtext"
)

// shells are the shells `runr completion` writes a script for.
var shells = []string{"bash", "zsh", "fish", "powershell"}

// NewCmdCompletion builds `runr completion SHELL`. The script it prints
// asks runr itself (its hidden __complete command) for the candidates, so
// run ids come from the run store as it is when Tab is pressed.
func NewCmdCompletion(f *Factory) *cobra.Command {
	io := f.IO
	return &cobra.Command{
		Use:   "completion bash|zsh|fish|powershell",
		Short: "Print a shell completion script",
		Long: `Print the completion script of a shell on stdout. Run ids (newest first, for
resume, status, stop, doctor and logs), stop reason codes and exit codes (for
reasons), and agent kinds (--agent) complete from runr itself.

  bash:        source <(runr completion bash)        (works with or without bash-completion)
  zsh:         runr completion zsh > "${fpath[1]}/_runr"
  fish:        runr completion fish > ~/.config/fish/completions/runr.fish
  powershell:  runr completion powershell | Out-String | Invoke-Expression`,
		Args:      cobra.ExactArgs(1),
		ValidArgs: shells,
		RunE: func(cmd *cobra.Command, args []string) error {
			root := cmd.Root()
			switch args[0] {
			case "bash":
				return writeBashCompletion(root, io.Out)
			case "zsh":
				return root.GenZshCompletion(io.Out)
			case "fish":
				return root.GenFishCompletion(io.Out, true)
			case "powershell":
				return root.GenPowerShellCompletionWithDesc(io.Out)
			}
			return stopreasons.Errorf(stopreasons.UsageError, "no completion for shell %q: runr writes one for %s", args[0], strings.Join(shells, ", "))
		},
	}
}

// bashInitCompletion is the function of cobra's bash script that needs
// _get_comp_words_by_ref from the bash-completion package; without the
// package every Tab printed "command not found".
const bashInitCompletion = `__runr_init_completion()
{
    COMPREPLY=()
    _get_comp_words_by_ref "$@" cur prev words cword
}`

// bashInitStandalone is bashInitCompletion with a fallback of its own
// where the package is missing.
const bashInitStandalone = `__runr_init_completion()
{
    COMPREPLY=()
    if declare -F _get_comp_words_by_ref >/dev/null 2>&1; then
        _get_comp_words_by_ref "$@" cur prev words cword
        return
    fi
    # Without the bash-completion package: the words of the line up to the
    # cursor, split on blanks only, so that --flag=value stays one word as
    # the package's -n =: keeps it.
    local line=${COMP_LINE:0:COMP_POINT}
    read -ra words <<<"$line"
    if [[ ${#words[@]} -eq 0 || $line == *[[:blank:]] ]]; then
        words+=("")
    fi
    cword=$((${#words[@]} - 1))
    cur=${words[cword]}
    prev=""
    if ((cword > 0)); then
        prev=${words[cword-1]}
    fi
}`

// writeBashCompletion writes cobra's bash script with bashInitStandalone in
// place of bashInitCompletion, so sourcing it works with bash alone.
func writeBashCompletion(root *cobra.Command, w io.Writer) error {
	var b bytes.Buffer
	if err := root.GenBashCompletionV2(&b, true); err != nil {
		return err
	}
	script := b.String()
	if !strings.Contains(script, bashInitCompletion) {
		// The test of the standalone script fails first; this keeps a
		// changed cobra from printing a script that only half works.
		return stopreasons.Errorf(stopreasons.InternalError, "bash completion: cobra's script changed; runr cannot make it work without bash-completion")
	}
	_, err := io.WriteString(w, strings.Replace(script, bashInitCompletion, bashInitStandalone, 1))
	return err
}

// maxDescribed bounds the runs whose state.json a completion reads for its
// description: pressing Tab must stay quick in a store of many runs.
const maxDescribed = 30

// completeRunIDs completes a run reference: latest, then the run ids of
// the store, newest first, read-only. A store that cannot be read
// completes nothing rather than failing.
func completeRunIDs(f *Factory) cobra.CompletionFunc {
	return func(cmd *cobra.Command, args []string, toComplete string) ([]cobra.Completion, cobra.ShellCompDirective) {
		const directive = cobra.ShellCompDirectiveNoFileComp | cobra.ShellCompDirectiveKeepOrder
		if len(args) > 0 {
			return nil, cobra.ShellCompDirectiveNoFileComp
		}
		var out []cobra.Completion
		if strings.HasPrefix("latest", toComplete) {
			out = append(out, cobra.CompletionWithDesc("latest", "the run created last"))
		}
		store, err := f.StoreRead()
		if err != nil {
			return out, directive
		}
		ids, err := store.List()
		if err != nil {
			return out, directive
		}
		slices.Reverse(ids)
		described := 0
		for _, id := range ids {
			if !strings.HasPrefix(id, toComplete) {
				continue
			}
			desc := ""
			if described < maxDescribed {
				described++
				desc = describeRun(store, id)
			}
			out = append(out, cobra.CompletionWithDesc(id, desc))
		}
		return out, directive
	}
}

// describeRun is a run's status and stop reason, for a completion's
// description; "" when its state cannot be read.
func describeRun(store *state.Store, id string) string {
	st, err := store.Load(id)
	if err != nil {
		return ""
	}
	desc := store.DisplayStatus(st)
	if st.StopReason != nil && st.StopReason.Code != stopreasons.Complete {
		desc += " · " + string(st.StopReason.Code)
	}
	return termtext.VisibleLine(desc)
}

// completeReasons completes `runr reasons`: every code, then every exit code.
func completeReasons(cmd *cobra.Command, args []string, toComplete string) ([]cobra.Completion, cobra.ShellCompDirective) {
	if len(args) > 0 {
		return nil, cobra.ShellCompDirectiveNoFileComp
	}
	var out []cobra.Completion
	all := stopreasons.All()
	for _, r := range all {
		if strings.HasPrefix(string(r.Code), toComplete) {
			out = append(out, cobra.CompletionWithDesc(string(r.Code), fmt.Sprintf("exit %d: %s", r.ExitCode, r.Title)))
		}
	}
	for _, r := range all {
		if exit := strconv.Itoa(r.ExitCode); strings.HasPrefix(exit, toComplete) {
			out = append(out, cobra.CompletionWithDesc(exit, string(r.Code)))
		}
	}
	return out, cobra.ShellCompDirectiveNoFileComp | cobra.ShellCompDirectiveKeepOrder
}

func completeList(values []string) cobra.CompletionFunc {
	return cobra.FixedCompletions(values, cobra.ShellCompDirectiveNoFileComp)
}

// addCompletions attaches the dynamic completions to the commands of root
// by name, so that a command's own file stays about its work.
func addCompletions(root *cobra.Command, f *Factory) {
	var families []string
	for _, fam := range stopreasons.Families {
		families = append(families, string(fam.Family))
	}
	var codes []string
	for _, r := range stopreasons.All() {
		codes = append(codes, string(r.Code))
	}
	flag := func(cmd *cobra.Command, name string, fn cobra.CompletionFunc) {
		if cmd.Flags().Lookup(name) != nil {
			// Registered once per flag; a second registration is the only error.
			_ = cmd.RegisterFlagCompletionFunc(name, fn)
		}
	}
	for _, cmd := range root.Commands() {
		switch cmd.Name() {
		case "resume", "status", "stop", "doctor", "logs", "export":
			if cmd.ValidArgsFunction == nil {
				cmd.ValidArgsFunction = completeRunIDs(f)
			}
			if cmd.Name() == "export" {
				flag(cmd, "format", completeList(exportFormats))
			}
		case "reasons":
			cmd.ValidArgsFunction = completeReasons
			flag(cmd, "format", completeList(ReasonsFormats))
		case "init", "version", "prune":
			cmd.ValidArgsFunction = cobra.NoFileCompletions
		case "report":
			cmd.ValidArgsFunction = cobra.NoFileCompletions
			flag(cmd, "by", completeList(state.ReportGroupings))
			flag(cmd, "format", completeList(reportFormats))
		}
		flag(cmd, "agent", completeList(agents.Kinds()))
		flag(cmd, "reason", completeList(codes))
		flag(cmd, "family", completeList(families))
	}
}
