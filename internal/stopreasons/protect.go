package stopreasons

// RuleProtect is the guard rule a change to a protected file breaks (the
// guard's Violation.Rule, and the condition of the guard_violation stop):
// a file that existed at the start of the run and matches a scope.protect
// glob was modified, deleted or renamed. It is defined here, beside the
// registry's texts about it, so the guard and the report of a stop spell it
// the same.
const RuleProtect = "protect"

// ProtectAdvice says what the protect rule stops and how to allow a change;
// messages about a protect violation end with it, and a report of one
// gives it as a hint.
const ProtectAdvice = "existing files matching scope.protect may not be modified, deleted or renamed (new files may be added, and changed again); " +
	"restore the files as they were at the start, or remove the glob from scope.protect or --protect to allow the change"
