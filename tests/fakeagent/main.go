// Command fakeagent is a scriptable stand-in for an AI coding agent, for runr's
// end-to-end tests. runr runs it as a command agent (`runr run -- fakeagent
// --do '...'`); it does what its script says, so a test can make it edit files,
// signal completion, fail, hang, ignore SIGTERM, leave children behind or flood
// its output, all as a real process.
//
// Usage:
//
//	fakeagent [--script FILE] [--do 'STEPS']... [--prompt TEXT | --prompt-file FILE] [PROMPT...]
//
// The script comes from --script FILE (or the file named by FAKEAGENT_SCRIPT)
// followed by every --do, each of which may hold several lines. The prompt is
// --prompt, the text of --prompt-file, the positional arguments joined by
// spaces, or else stdin (read in full at start, unless stdin is a terminal).
//
// A script is one step per line; blank lines and lines starting with "# " or
// "//" are comments. A step is
//
//	[SELECTORS:] ACTION [; ACTION]...
//
// Selectors limit the step to some calls, and all of them must match: @3,
// @2-4, @5+ (RUNR_ITERATION), m2, m1-2 (RUNR_MILESTONE), #1, #2+ (this
// program's own call count). Selectors stand only at the start of a line: to
// select other actions, start another line or pass another --do. A step
// without selectors runs on every call; the steps run in order. Text arguments decode \n, \t, \; and \\. Actions:
//
//	write PATH TEXT      create or overwrite PATH (parent directories too)
//	append PATH TEXT     append TEXT to PATH
//	delete PATH          remove PATH
//	rename A B           rename A to B
//	print TEXT           a line on stdout
//	eprint TEXT          a line on stderr
//	status done | failed | blocked WHY   print RUNR_STATUS: ...
//	promise              print <promise>COMPLETE</promise>
//	exit N               exit with code N at once
//	sleep DURATION       sleep (Go duration: 500ms, 30s); SIGTERM ends it
//	hang                 sleep forever, printing nothing
//	spin DURATION        keep a CPU busy for DURATION, printing nothing
//	trickle PATH DURATION  append a byte to PATH every 20ms for DURATION, printing nothing
//	ignore-term          ignore SIGTERM from now on, appending "FAKEAGENT TERM
//	                     IGNORED pid=PID" to FAKEAGENT_READY_FILE for each one
//	grandchild [DUR]     start a child in the same process group that keeps
//	                     stdout and stderr open and sleeps DUR (default 60s)
//	background [DUR]     start a child in the same process group with its stdio
//	                     closed that outlives this program, sleeping DUR (60s)
//	flood SIZE           write SIZE bytes (4096, 64K, 10M, 1G) to stdout
//	flood-lines N        write N numbered lines to stdout
//	ready                print "FAKEAGENT READY pid=PID" on stderr and append it
//	                     to the file named by FAKEAGENT_READY_FILE
//	wait-for PATH        wait until PATH exists
//	echo-prompt          print the prompt
//	env                  print the RUNR_* environment variables, sorted
//	fix-test [M]         make the demo repository's milestone M (default
//	                     RUNR_MILESTONE) pass in full (examples/demo)
//	touch-count PATH     append RUNR_ITERATION and a newline to PATH
//	json FILE            copy FILE to stdout line by line
//	usage IN OUT [COST [MODEL]]  print a line `RUNR_USAGE: input_tokens=IN
//	                     output_tokens=OUT [cost_usd=COST] [model=MODEL]`: the
//	                     call's usage so far, as a command agent reports it
//
// grandchild and background also append "FAKEAGENT GRANDCHILD pid=PID" or
// "FAKEAGENT BACKGROUND pid=PID" to FAKEAGENT_READY_FILE, so a test can check
// that runr ended them.
//
// The call count lives in the file named by FAKEAGENT_STATE, else in
// $RUNR_RUN_DIR/fakeagent-calls, one line per call, so it carries on across
// resumes; with neither set every call is call 1.
//
// When FAKEAGENT_ARGS_FILE is set, every call appends its argv as a JSON array
// to that file. Installed under another name (copied as claude, codex, ...) and
// with FAKEAGENT_REPLAY set, the program ignores its arguments (but for a lone
// --version, which prints a version and counts as no call), copies the file
// FAKEAGENT_REPLAY to stdout and exits with FAKEAGENT_EXIT (default 0): a
// recorded session of that agent, for adapter tests. Replays count calls like
// scripts do, and FAKEAGENT_REPLAY_N and FAKEAGENT_EXIT_N, when set, replace
// the two for call N, so a run can meet a server error first and a success
// on its retry. With FAKEAGENT_REPLAY_HANG=1 the replay does not exit but
// hangs after the file, like a CLI still at work (a recording cut short).
//
// Exit codes: 0 at the end of the script, N for exit N, 1 when an action
// fails, 2 for a bad script or usage.
package main

import (
	"encoding/json"
	"errors"
	"flag"
	"fmt"
	"io"
	"os"
	"path/filepath"
	"strconv"
	"strings"
	"time"
)

func main() {
	os.Exit(run(os.Args))
}

// usageError marks errors in the command line or the script (exit 2).
type usageError struct{ error }

// exitCode is returned by the exit action to end the program with a code.
type exitCode int

func (e exitCode) Error() string { return fmt.Sprintf("exit %d", int(e)) }

func run(argv []string) int {
	if spec, ok := os.LookupEnv(childEnv); ok {
		return runChild(spec)
	}
	name := strings.TrimSuffix(filepath.Base(argv[0]), ".exe")
	if name != "fakeagent" && len(argv) == 2 && argv[1] == "--version" {
		// Installed as another agent, it answers a version query as the
		// real CLI would; the query is not a call.
		fmt.Printf("%s 0.0.0-fake (fakeagent)\n", name)
		return 0
	}
	err := record(argv)
	if err == nil {
		if replay := os.Getenv("FAKEAGENT_REPLAY"); replay != "" && name != "fakeagent" {
			err = runReplay(replay)
		} else {
			err = runScript(argv[1:])
		}
	}
	var code exitCode
	var usage usageError
	switch {
	case err == nil:
		return 0
	case errors.As(err, &code):
		return int(code)
	case errors.As(err, &usage):
		fmt.Fprintf(os.Stderr, "fakeagent: %v\n", err)
		return 2
	default:
		fmt.Fprintf(os.Stderr, "fakeagent: %v\n", err)
		return 1
	}
}

// record appends argv to FAKEAGENT_ARGS_FILE, so a test sees how runr called
// the agent.
func record(argv []string) error {
	path := os.Getenv("FAKEAGENT_ARGS_FILE")
	if path == "" {
		return nil
	}
	line, err := json.Marshal(argv)
	if err != nil {
		return err
	}
	return appendFile(path, string(line)+"\n")
}

// runReplay plays a recorded agent session: the file to stdout, then the exit
// code of FAKEAGENT_EXIT; FAKEAGENT_REPLAY_N and FAKEAGENT_EXIT_N take their
// place on call N.
func runReplay(path string) error {
	n, err := countCall(call{iteration: envInt("RUNR_ITERATION"), milestone: envInt("RUNR_MILESTONE")})
	if err != nil {
		return err
	}
	if p := os.Getenv(fmt.Sprintf("FAKEAGENT_REPLAY_%d", n)); p != "" {
		path = p
	}
	exitVar := "FAKEAGENT_EXIT"
	if _, ok := os.LookupEnv(fmt.Sprintf("FAKEAGENT_EXIT_%d", n)); ok {
		exitVar = fmt.Sprintf("FAKEAGENT_EXIT_%d", n)
	}
	code := 0
	if s := os.Getenv(exitVar); s != "" {
		n, err := strconv.Atoi(s)
		if err != nil || n < 0 || n > 255 {
			return usageError{fmt.Errorf("%s=%q: want an exit code from 0 to 255", exitVar, s)}
		}
		code = n
	}
	// A real agent reads its prompt; draining stdin keeps the writer from
	// seeing a broken pipe.
	if _, err := readPrompt(); err != nil {
		return err
	}
	if err := copyLines(os.Stdout, path); err != nil {
		return err
	}
	if os.Getenv("FAKEAGENT_REPLAY_HANG") == "1" {
		for {
			time.Sleep(time.Hour)
		}
	}
	return exitCode(code)
}

type stringList []string

func (l *stringList) String() string     { return strings.Join(*l, "; ") }
func (l *stringList) Set(s string) error { *l = append(*l, s); return nil }

func runScript(args []string) error {
	fs := flag.NewFlagSet("fakeagent", flag.ContinueOnError)
	fs.SetOutput(io.Discard)
	scriptFile := fs.String("script", os.Getenv("FAKEAGENT_SCRIPT"), "script `FILE` (default $FAKEAGENT_SCRIPT)")
	var dos stringList
	fs.Var(&dos, "do", "script `STEPS` given inline (repeatable)")
	promptText := fs.String("prompt", "", "the prompt `TEXT` instead of stdin")
	promptFile := fs.String("prompt-file", "", "read the prompt from `FILE` instead of stdin")
	if err := fs.Parse(args); err != nil {
		if errors.Is(err, flag.ErrHelp) {
			fmt.Fprint(os.Stdout, helpText)
			return nil
		}
		return usageError{fmt.Errorf("%w (fakeagent -h shows the usage)", err)}
	}

	var steps []step
	if *scriptFile != "" {
		data, err := os.ReadFile(*scriptFile)
		if err != nil {
			return usageError{fmt.Errorf("read the script: %w", err)}
		}
		s, err := parseScript("script "+*scriptFile, string(data))
		if err != nil {
			return usageError{err}
		}
		steps = append(steps, s...)
	}
	for i, d := range dos {
		s, err := parseScript(fmt.Sprintf("--do #%d", i+1), d)
		if err != nil {
			return usageError{err}
		}
		steps = append(steps, s...)
	}
	if *scriptFile == "" && len(dos) == 0 {
		return usageError{errors.New("no script: pass --script FILE, --do 'STEPS' or set FAKEAGENT_SCRIPT")}
	}

	var prompt string
	var err error
	switch {
	case *promptText != "":
		prompt = *promptText
	case *promptFile != "":
		var data []byte
		data, err = os.ReadFile(*promptFile)
		prompt = string(data)
	case fs.NArg() > 0:
		prompt = strings.Join(fs.Args(), " ")
	default:
		prompt, err = readPrompt()
	}
	if err != nil {
		return fmt.Errorf("read the prompt: %w", err)
	}

	c := call{
		iteration: envInt("RUNR_ITERATION"),
		milestone: envInt("RUNR_MILESTONE"),
	}
	if c.number, err = countCall(c); err != nil {
		return err
	}
	r := &runner{prompt: prompt, call: c}
	for _, s := range steps {
		if !s.applies(c) {
			continue
		}
		for _, a := range s.actions {
			if err := r.do(a); err != nil {
				var code exitCode
				if errors.As(err, &code) {
					return err
				}
				return fmt.Errorf("%s: %s: %w", s.where, a.name, err)
			}
		}
	}
	return nil
}

// readPrompt reads stdin to the end unless it is a terminal, where nobody
// would ever end it.
func readPrompt() (string, error) {
	if fi, err := os.Stdin.Stat(); err == nil && fi.Mode()&os.ModeCharDevice != 0 {
		return "", nil
	}
	data, err := io.ReadAll(os.Stdin)
	return string(data), err
}

// envInt reads a number runr passes; unset or not a number counts as 0, which
// no @ or m selector from 1 up matches.
func envInt(name string) int {
	n, err := strconv.Atoi(os.Getenv(name))
	if err != nil {
		return 0
	}
	return n
}

const helpText = `usage: fakeagent [--script FILE] [--do 'STEPS']... [--prompt TEXT | --prompt-file FILE] [PROMPT...]

A step per line: [SELECTORS:] ACTION [; ACTION]...
Selectors: @N @N-M @N+ (RUNR_ITERATION), mN (RUNR_MILESTONE), #N (call count)
Actions: write PATH TEXT, append PATH TEXT, delete PATH, rename A B,
  print TEXT, eprint TEXT, status done|failed|blocked WHY, promise, exit N,
  sleep DURATION, hang, spin DURATION, trickle PATH DURATION, ignore-term, grandchild [DUR], background [DUR],
  flood SIZE, flood-lines N, ready, wait-for PATH, echo-prompt, env,
  fix-test [M], touch-count PATH, json FILE, usage IN OUT [COST [MODEL]]
Environment: FAKEAGENT_SCRIPT, FAKEAGENT_STATE, FAKEAGENT_READY_FILE,
  FAKEAGENT_ARGS_FILE, FAKEAGENT_REPLAY[_N] and FAKEAGENT_EXIT[_N] (under another name)
See the package documentation (go doc ./tests/fakeagent) for the details.
`
