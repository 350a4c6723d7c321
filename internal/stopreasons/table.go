package stopreasons

// Code names a stop reason. Use the constants: a misspelt code does not compile.
type Code string

// The stop reasons and runr errors of the registry.
const (
	Complete            Code = "complete"
	GuardViolation      Code = "guard_violation"
	LockfileViolation   Code = "lockfile_violation"
	DirtyWorktree       Code = "dirty_worktree"
	FileCollision       Code = "file_collision"
	MergeConflict       Code = "merge_conflict"
	VerificationFailed  Code = "verification_failed"
	VerificationTimeout Code = "verification_timeout"
	ConsecutiveFails    Code = "consecutive_fails"
	RetryRateExceeded   Code = "retry_rate_exceeded"
	RejectRateExceeded  Code = "reject_rate_exceeded"
	ConditionFailed     Code = "condition_failed"
	ChangesNotTested    Code = "changes_not_tested"
	ReviewLoopDetected  Code = "review_loop_detected"
	ReviewRejected      Code = "review_rejected"
	WorkerBlocked       Code = "worker_blocked"
	WorkerFailed        Code = "worker_failed"
	WorkerTimeout       Code = "worker_timeout"
	WorkerRateLimited   Code = "worker_rate_limited"
	WorkerAuthFailed    Code = "worker_auth_failed"
	WorkerNotFound      Code = "worker_not_found"
	NoProgress          Code = "no_progress"
	SameErrorRepeated   Code = "same_error_repeated"
	NoopStreak          Code = "noop_streak"
	PhaseLoop           Code = "phase_loop"
	Timeout             Code = "timeout"
	MaxTicks            Code = "max_ticks"
	Stalled             Code = "stalled"
	BudgetExceeded      Code = "budget_exceeded"
	MaxIterations       Code = "max_iterations"
	CircuitBreaker      Code = "circuit_breaker"
	UserStopped         Code = "user_stopped"
	Terminated          Code = "terminated"
	InternalError       Code = "internal_error"
	UsageError          Code = "usage_error"
	StateCorrupt        Code = "state_corrupt"
	RunNotFound         Code = "run_not_found"
	EnvironmentInvalid  Code = "environment_invalid"
	RunLocked           Code = "run_locked"
	ConfigInvalid       Code = "config_invalid"
)

// table is the registry: a new stop reason is its code above and its row
// here. Order: by family, then exit code. The diagnosis and
// next actions are text/templates over Details.
var table = []Reason{
	{
		Code: Complete, Title: "Run completed", Family: FamilySuccess, ExitCode: 0, Category: CategoryCompleted,
		When:      "all milestones approved, or a success condition met",
		Diagnosis: `The run completed: {{.Approved}} of {{plural .Total "milestone"}} approved{{if hasPrefix .Condition "stop.success"}}, and the success condition {{.Condition}} was met{{with .Message}} ({{.}}){{end}}{{end}}.`,
		NextActions: []string{
			"review the changes the agent made before merging them",
			"runr status {{.RunID}}",
		},
	},
	{
		Code: GuardViolation, Title: "Change outside the allowed scope", Family: FamilyConstraint, ExitCode: 2, Category: CategoryGuardrail,
		When:      "a changed file is outside scope.allow or inside scope.deny, or a file that existed at the start and matches scope.protect was modified, deleted or renamed",
		Diagnosis: `{{if eq .Condition "protect"}}The agent modified, deleted or renamed {{plural (count .Files .FilesOmitted) "protected file"}} that existed when the run started (scope.protect): {{files .Files .FilesOmitted}}.{{else}}The agent changed {{plural (count .Files .FilesOmitted) "file"}} outside its scope ({{.Condition}}): {{files .Files .FilesOmitted}}.{{end}}`,
		NextActions: []string{
			"{{if eq .Condition \"protect\"}}restore the protected files ({{if .FilesOmitted}}more than listed here: git status names them all{{else}}the stash below{{end}}), or remove their glob from scope.protect (--protect) in runr.yaml if the change is wanted{{else}}revert the out-of-scope changes, or widen scope.allow / narrow scope.deny in runr.yaml{{end}}",
			"git stash push --include-untracked -- {{shellJoin .Stash}}",
			"runr resume {{.RunID}}",
		},
	},
	{
		Code: LockfileViolation, Title: "Lockfile changed", Family: FamilyConstraint, ExitCode: 3, Category: CategoryGuardrail,
		When:      "a lockfile changed without --allow-deps",
		Diagnosis: `The agent changed dependency lockfile(s) {{files .Files .FilesOmitted}} and the run does not allow dependency changes.`,
		NextActions: []string{
			"if the dependency change is wanted, allow it:",
			"runr resume {{.RunID}} --allow-deps",
		},
	},
	{
		Code: DirtyWorktree, Title: "Uncommitted changes before the run", Family: FamilyConstraint, ExitCode: 4, Category: CategoryGuardrail,
		When:      "uncommitted changes before the run, without --allow-dirty",
		Diagnosis: `The checkout had {{plural (count .Files .FilesOmitted) "uncommitted change"}} before the run started: {{files .Files .FilesOmitted}}.`,
		NextActions: []string{
			"commit or stash your changes, or run with --allow-dirty (or --worktree to leave this checkout alone){{if .FilesOmitted}}; there are more than listed here: git status names them all{{else}}; the stash below keeps the task and config files{{end}}",
			"git stash push --include-untracked -- {{shellJoin .Stash}}",
			"runr resume {{.RunID}}",
		},
	},
	{
		Code: FileCollision, Title: "Another live run claims the same files", Family: FamilyConstraint, ExitCode: 5, Category: CategoryGuardrail,
		When:      "a live run of the same checkout claims an overlapping scope, without --force-parallel",
		Diagnosis: `Run {{.Other}} is live on this checkout and claims an overlapping scope ({{files .Files .FilesOmitted}}).`,
		NextActions: []string{
			"wait for the other run, give the runs disjoint scope.allow, or use --worktree",
			"runr status {{.Other}}",
		},
	},
	{
		Code: MergeConflict, Title: "A milestone failed to merge", Family: FamilyConstraint, ExitCode: 6, Category: CategoryGuardrail,
		When:      "parallel runs: a milestone failed to merge (conflict, or verify failed on the merged tree) after parallel.max_requeues returns (§11)",
		Diagnosis: `Milestone {{.Milestone}} ({{.MilestoneGoal}}) did not merge into the run's integration branch runr/{{.RunID}} from its branch runr/{{.RunID}}-m{{.Milestone}} after {{plural .Value "return"}} to a worker (parallel.max_requeues {{.Threshold}}){{with .Files}}; conflicting files: {{paths .}}{{end}}{{with .Command}}; on the merged tree this check failed: {{.}}{{end}}.`,
		NextActions: []string{
			"compare the milestone's branch with the integration branch, resolve the conflict on the milestone's branch (or split the milestones so they touch different lines, or put them in separate ## groups), then resume: the merge is tried again",
			"git diff runr/{{.RunID}}...runr/{{.RunID}}-m{{.Milestone}}",
			"runr doctor {{.RunID}}",
			"runr resume {{.RunID}}",
		},
	},
	{
		Code: VerificationFailed, Title: "Verification kept failing", Family: FamilyFailure, ExitCode: 10, Category: CategoryGuardrail,
		When:      "a milestone used up its retries, last on a verify or review failure",
		Diagnosis: `Milestone {{.Milestone}} ({{.MilestoneGoal}}) failed {{plural .Value "attempt"}} (limit {{.Threshold}}){{with .Command}}; last failing check: {{.}}{{end}}.`,
		NextActions: []string{
			"read the failing output, fix the cause or clarify the milestone in the task, then resume with fresh retries",
			"runr doctor {{.RunID}}",
			"runr resume {{.RunID}}",
		},
	},
	{
		Code: VerificationTimeout, Title: "Verification ran too long", Family: FamilyFailure, ExitCode: 11, Category: CategoryGuardrail,
		When:      "a verify command ran past verify.timeout",
		Diagnosis: `The verify command {{.Command}} ran past verify.timeout ({{.Threshold}}).`,
		NextActions: []string{
			"raise verify.timeout in runr.yaml if the check is slow, or find why it hangs",
			"runr resume {{.RunID}} --force",
		},
	},
	{
		Code: ConsecutiveFails, Title: "Too many failed milestones in a row", Family: FamilyFailure, ExitCode: 12, Category: CategoryGuardrail,
		When:      "max_consecutive_fails milestones failed in a row (skip mode)",
		Diagnosis: `{{plural .Value "milestone"}} failed or were rejected in a row (limit {{.Threshold}}).`,
		NextActions: []string{
			"the task may be too hard or too vague for the agent; split it or clarify it",
			"runr doctor {{.RunID}}",
			"runr resume {{.RunID}}",
		},
	},
	{
		Code: RetryRateExceeded, Title: "Retry rate too high", Family: FamilyFailure, ExitCode: 13, Category: CategoryGuardrail,
		When:      "retry rate above max_retry_rate",
		Diagnosis: `{{.Message}}`,
		NextActions: []string{
			"most milestones needed more than one attempt; make the milestones smaller or clearer",
			"runr resume {{.RunID}}",
		},
	},
	{
		Code: RejectRateExceeded, Title: "Reject rate too high", Family: FamilyFailure, ExitCode: 14, Category: CategoryGuardrail,
		When:      "reject rate above max_reject_rate",
		Diagnosis: `{{.Message}}`,
		NextActions: []string{
			"too many milestones failed or were rejected; check the verify and review commands and the task",
			"runr doctor {{.RunID}}",
			"runr resume {{.RunID}}",
		},
	},
	{
		Code: ConditionFailed, Title: "A failure condition was met", Family: FamilyFailure, ExitCode: 15, Category: CategoryGuardrail,
		When:      "a condition of stop.failure or stop.conditions was met",
		Diagnosis: `The condition {{.Condition}} was met: {{.Message}}`,
		NextActions: []string{
			"look at what the condition watches, fix the cause, then resume",
			"runr resume {{.RunID}}",
		},
	},
	{
		Code: ChangesNotTested, Title: "Verify passed without testing the changes", Family: FamilyFailure, ExitCode: 16, Category: CategoryGuardrail,
		When: "a milestone used up its retries with verify passing without running the changed lines (verify.coverage.min_changed) or without running any test (verify.require_tests); " +
			"details: kind (coverage or no_tests), covered (fraction), min_changed, uncovered [{file, lines: \"12-15,20\"}]",
		Diagnosis: `Milestone {{.Milestone}} ({{.MilestoneGoal}}) used up its retries (limit {{.Threshold}}) with verify passing {{if eq .UntestedKind "no_tests"}}without running any test{{else}}without running the changed lines: {{.Covered}} of its changed executable lines ran, below verify.coverage.min_changed {{.MinChanged}}{{with .Uncovered}}; not run: {{join . "; "}}{{end}}{{end}}.`,
		NextActions: []string{
			"add tests that call the new code (or make the verify command run them), or clarify the milestone in the task so the agent writes them, then resume with fresh retries",
			"runr doctor {{.RunID}}",
			"runr resume {{.RunID}}",
		},
	},
	{
		Code: ReviewLoopDetected, Title: "Review loop", Family: FamilyReview, ExitCode: 20, Category: CategoryGuardrail,
		When:      "the review asked for the same changes twice in a row, or max_review_rounds rounds",
		Diagnosis: `The review of milestone {{.Milestone}} went round {{plural .Value "time"}}{{with .Threshold}} (limit {{.}}){{end}}: {{.Message}}`,
		NextActions: []string{
			"the agent and the reviewer disagree; read the review notes and settle it in the task",
			"runr doctor {{.RunID}}",
			"runr resume {{.RunID}}",
		},
	},
	{
		Code: ReviewRejected, Title: "Review rejected the work", Family: FamilyReview, ExitCode: 21, Category: CategoryGuardrail,
		When:      "the review rejected the work",
		Diagnosis: `The review command {{.Command}} rejected milestone {{.Milestone}} ({{.MilestoneGoal}}).`,
		NextActions: []string{
			"read the review output and decide whether the milestone should be redone",
			"runr doctor {{.RunID}}",
			"runr resume {{.RunID}}",
		},
	},
	{
		Code: WorkerBlocked, Title: "Agent reported it is blocked", Family: FamilyWorker, ExitCode: 30, Category: CategoryGuardrail,
		When:      "the agent reported it is blocked",
		Diagnosis: `The agent said it is blocked on milestone {{.Milestone}} ({{.MilestoneGoal}}){{with .Message}}: {{.}}{{end}}.`,
		NextActions: []string{
			"give the agent what it asked for where it can read it: commit a note or the missing piece to the repository (the run's task does not change on resume), then resume",
			"runr resume {{.RunID}}",
		},
	},
	{
		Code: WorkerFailed, Title: "Agent kept failing", Family: FamilyWorker, ExitCode: 31, Category: CategoryError,
		When:      "a milestone used up its retries, last on the agent's own failure",
		Diagnosis: `The agent failed {{plural .Value "attempt"}} at milestone {{.Milestone}} (limit {{.Threshold}}){{with .Message}}: {{.}}{{end}}.`,
		NextActions: []string{
			"read the agent's log for the error; check its installation, model and credentials",
			"runr doctor {{.RunID}}",
			"runr resume {{.RunID}}",
		},
	},
	{
		Code: WorkerTimeout, Title: "Agent call ran too long", Family: FamilyWorker, ExitCode: 32, Category: CategoryError, AutoResumable: true,
		When:      "one agent call ran past agent.timeout",
		Diagnosis: `One agent call ran past agent.timeout ({{.Threshold}}) at milestone {{.Milestone}}.`,
		NextActions: []string{
			"raise agent.timeout if the milestone is large, or split the milestone",
			"runr resume {{.RunID}}",
		},
	},
	{
		Code: WorkerRateLimited, Title: "Agent hit a rate or usage limit", Family: FamilyWorker, ExitCode: 33, Category: CategoryError, AutoResumable: true,
		When:      "the agent hit a provider rate or usage limit",
		Diagnosis: `The agent hit a {{if eq .LimitKind "spend_cap"}}spend cap (no credits or quota left: it lifts when the account is topped up, not by waiting){{else if eq .LimitKind "usage_window"}}usage limit (a subscription's window){{else if eq .LimitKind "rate"}}rate limit{{else}}rate or usage limit{{end}}{{with .ResetAt}}; it resets at {{.}}{{end}}.`,
		NextActions: []string{
			"resume after the limit resets, or let runr wait for it",
			"runr resume {{.RunID}} --auto-resume",
		},
	},
	{
		Code: WorkerAuthFailed, Title: "Agent could not authenticate", Family: FamilyWorker, ExitCode: 34, Category: CategoryError,
		When:      "the agent could not authenticate",
		Diagnosis: `The agent could not authenticate with its provider{{with .Message}}: {{.}}{{end}}.`,
		NextActions: []string{
			"log the agent in again or set its API key, check with runr doctor, then resume",
			"runr doctor",
			"runr resume {{.RunID}}",
		},
	},
	{
		Code: WorkerNotFound, Title: "Agent program not found", Family: FamilyWorker, ExitCode: 35, Category: CategoryError,
		When:      "the agent program does not exist or cannot be run",
		Diagnosis: `The agent program {{.Command}} does not exist or cannot be run.`,
		NextActions: []string{
			"install the agent CLI or fix agent.command / --agent, then check with runr doctor",
			"runr doctor",
		},
	},
	{
		Code: NoProgress, Title: "No progress", Family: FamilyStuck, ExitCode: 40, Category: CategoryGuardrail,
		When:      "no_progress iterations in a row changed no file and improved no check",
		Diagnosis: `{{plural .Value "iteration"}} in a row changed no file and improved no check (limit {{.Threshold}}).`,
		NextActions: []string{
			"the agent is going nowhere; clarify the milestone or give it what it lacks",
			"runr doctor {{.RunID}}",
			"runr resume {{.RunID}}",
		},
	},
	{
		Code: SameErrorRepeated, Title: "Same error again and again", Family: FamilyStuck, ExitCode: 41, Category: CategoryGuardrail,
		When:      "the same error signature on same_error failed attempts in a row",
		Diagnosis: `The same error came back {{plural .Value "time"}} in a row (limit {{.Threshold}}){{with .Command}} from {{.}}{{end}}{{with .Signature}} (signature {{.}}){{end}}.`,
		NextActions: []string{
			"fix the cause of the repeated error (or tell the agent how in the task), then resume with fresh retries",
			"runr doctor {{.RunID}}",
			"runr resume {{.RunID}}",
		},
	},
	{
		Code: NoopStreak, Title: "Agent changed nothing", Family: FamilyStuck, ExitCode: 42, Category: CategoryGuardrail,
		When:      "noop agent calls in a row changed nothing",
		Diagnosis: `{{plural .Value "agent call"}} in a row left the tree unchanged (limit {{.Threshold}}).`,
		NextActions: []string{
			"check that the agent may write files (permissions, sandbox, working directory)",
			"runr doctor {{.RunID}}",
			"runr resume {{.RunID}}",
		},
	},
	{
		Code: PhaseLoop, Title: "Phase loop", Family: FamilyStuck, ExitCode: 43, Category: CategoryGuardrail,
		When:      "max_edge backward edges (verify→implement, review→implement) in one milestone",
		Diagnosis: `Milestone {{.Milestone}} went back {{plural .Value "time"}} on {{.Condition}} (limit {{.Threshold}}).`,
		NextActions: []string{
			"the milestone loops between phases; split it or clarify what done means",
			"runr doctor {{.RunID}}",
			"runr resume {{.RunID}}",
		},
	},
	{
		Code: Timeout, Title: "Time budget spent", Family: FamilyResourceLimit, ExitCode: 124, Category: CategoryGuardrail,
		When:      "the time budget ran out",
		Diagnosis: `The time budget of {{.Threshold}} ran out after {{.Value}}; {{.Approved}} of {{plural .Total "milestone"}} approved.`,
		NextActions: []string{
			"grant more time to continue where the run stopped",
			"runr resume {{.RunID}} --time {{.Grant}}",
		},
	},
	{
		Code: MaxTicks, Title: "Tick budget spent", Family: FamilyResourceLimit, ExitCode: 125, Category: CategoryGuardrail,
		When:      "max_ticks phase steps",
		Diagnosis: `The run used its {{plural .Threshold "tick"}}; {{.Approved}} of {{plural .Total "milestone"}} approved.`,
		NextActions: []string{
			"grant more ticks to continue where the run stopped",
			"runr resume {{.RunID}} --max-ticks {{.Grant}}",
		},
	},
	{
		Code: Stalled, Title: "Agent stalled", Family: FamilyResourceLimit, ExitCode: 126, Category: CategoryGuardrail, AutoResumable: true,
		When:      "no sign of life from the agent's call for agent.idle_timeout: no output, CPU time, I/O or change in its processes (output only where /proc is missing)",
		Diagnosis: `The agent's call showed no sign of life (no output, CPU time, I/O or change in its processes) for {{.Threshold}} (agent.idle_timeout) at milestone {{.Milestone}}{{with .Message}}: {{.}}{{end}}.`,
		NextActions: []string{
			"resume; raise agent.idle_timeout if the agent waits quietly for long (on a model, or a lock)",
			"runr resume {{.RunID}}",
		},
	},
	{
		Code: BudgetExceeded, Title: "Cost budget spent", Family: FamilyResourceLimit, ExitCode: 127, Category: CategoryGuardrail,
		When:      "the cost (USD) or token budget is spent",
		Diagnosis: `The {{.Condition}} budget is spent: {{.Value}} of {{.Threshold}}.`,
		NextActions: []string{
			"grant more budget to continue where the run stopped",
			"runr resume {{.RunID}} --max-cost {{.Grant}}",
		},
	},
	{
		Code: MaxIterations, Title: "Iteration budget spent", Family: FamilyResourceLimit, ExitCode: 128, Category: CategoryGuardrail,
		When:      "max_iterations agent calls",
		Diagnosis: `The run made its {{plural .Threshold "agent call"}}; {{.Approved}} of {{plural .Total "milestone"}} approved.`,
		NextActions: []string{
			"grant more iterations to continue where the run stopped",
			"runr resume {{.RunID}} --max-iterations {{.Grant}}",
		},
	},
	{
		Code: CircuitBreaker, Title: "Circuit breaker tripped", Family: FamilyResourceLimit, ExitCode: 129, Category: CategoryGuardrail,
		When:      "circuit_breaker attempts in all, whatever their outcome",
		Diagnosis: `The run made {{plural .Value "attempt"}} in all (circuit breaker {{.Threshold}}).`,
		NextActions: []string{
			"that is far more attempts than the task should need; read the doctor report before going on",
			"runr doctor {{.RunID}}",
		},
	},
	{
		Code: UserStopped, Title: "Stopped by the user", Family: FamilyUser, ExitCode: 130, Category: CategoryGuardrail,
		When:      "SIGINT (Ctrl+C), or `runr stop`",
		Diagnosis: `The run was stopped at tick {{.Tick}}{{with .Message}} ({{.}}){{end}}.`,
		NextActions: []string{
			"continue where it stopped",
			"runr resume {{.RunID}}",
		},
	},
	{
		Code: Terminated, Title: "Terminated by a signal", Family: FamilyUser, ExitCode: 143, Category: CategoryGuardrail, AutoResumable: true,
		When:      "SIGTERM or SIGHUP (CI cancel, pod eviction, lost terminal)",
		Diagnosis: `runr was told to stop{{with .Message}} ({{.}}){{end}} at tick {{.Tick}} and stopped the run cleanly.`,
		NextActions: []string{
			"continue where it stopped",
			"runr resume {{.RunID}}",
		},
	},
	{
		Code: InternalError, Title: "Internal error", Family: FamilyRunr, ExitCode: 1, Category: CategoryError,
		When:      "a bug or an unexpected I/O failure in runr itself",
		Diagnosis: `runr failed: {{.Message}}`,
		NextActions: []string{
			"check disk space and permissions of the run store; if it persists, report it with the run's logs",
			"runr doctor",
		},
	},
	{
		Code: UsageError, Title: "Usage error", Family: FamilyRunr, ExitCode: 64, Category: CategoryError,
		When:        "unknown flag, wrong arguments, nothing to do, or a flag the situation needs is missing",
		Diagnosis:   `{{.Message}}`,
		NextActions: []string{"runr --help"},
	},
	{
		Code: StateCorrupt, Title: "Run state unreadable", Family: FamilyRunr, ExitCode: 65, Category: CategoryError,
		When:        "state.json unreadable, invalid, or of a newer schema",
		Diagnosis:   `{{.Message}}`,
		NextActions: []string{"the file was left as it was; inspect it, or start a new run"},
	},
	{
		Code: RunNotFound, Title: "No such run", Family: FamilyRunr, ExitCode: 66, Category: CategoryError,
		When:        "no run with that id",
		Diagnosis:   `{{.Message}}`,
		NextActions: []string{"runr status"},
	},
	{
		Code: EnvironmentInvalid, Title: "Environment not usable", Family: FamilyRunr, ExitCode: 69, Category: CategoryError,
		When:        "no git repository, the run store not writable, a required program missing",
		Diagnosis:   `{{.Message}}`,
		NextActions: []string{"runr doctor"},
	},
	{
		Code: RunLocked, Title: "Run is held by another runr", Family: FamilyRunr, ExitCode: 75, Category: CategoryError,
		When:        "another live runr process holds the run",
		Diagnosis:   `{{.Message}}`,
		NextActions: []string{"wait for the other runr process, or stop it", "runr stop {{.RunID}}"},
	},
	{
		Code: ConfigInvalid, Title: "Invalid configuration", Family: FamilyRunr, ExitCode: 78, Category: CategoryError,
		When:        "a value in runr.yaml, RUNR_* env or a flag is invalid (`--time banana`)",
		Diagnosis:   `{{.Message}}`,
		NextActions: []string{"fix the value named above; runr doctor checks runr.yaml", "runr doctor"},
	},
}
