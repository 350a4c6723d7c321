// Command runr-demo-agent is the scripted agent of runr's demo. runr runs it
// once per iteration in the demo repository with the prompt on stdin; it reads
// the milestone from RUNR_MILESTONE_GOAL (or RUNR_MILESTONE), quotes the
// feedback of a failed attempt it finds in the prompt, makes the next attempt at the
// milestone and says what it did, the way a real coding agent reports. It needs
// no network and no API key.
package main

import (
	"bufio"
	"fmt"
	"io"
	"os"
	"strconv"
	"strings"

	"github.com/runr-dev/runr/examples/demo/demofix"
)

func main() {
	if err := run(os.Stdin, os.Stdout); err != nil {
		fmt.Fprintf(os.Stderr, "runr-demo-agent: %v\n", err)
		fmt.Println("RUNR_STATUS: failed")
		os.Exit(1)
	}
}

func run(stdin io.Reader, stdout io.Writer) error {
	prompt, err := io.ReadAll(stdin)
	if err != nil {
		return fmt.Errorf("read the prompt from stdin: %w", err)
	}
	goal := os.Getenv("RUNR_MILESTONE_GOAL")
	number, _ := strconv.Atoi(os.Getenv("RUNR_MILESTONE"))
	milestone, err := demofix.Find(goal, number)
	if err != nil {
		return err
	}
	dir, err := os.Getwd()
	if err != nil {
		return err
	}

	say := func(format string, args ...any) { fmt.Fprintf(stdout, "● "+format+"\n", args...) }
	say("Milestone %s, iteration %s: %s", orDash(os.Getenv("RUNR_MILESTONE")), orDash(os.Getenv("RUNR_ITERATION")), orDash(goal))
	if lines := feedback(string(prompt)); len(lines) > 0 {
		say("The last attempt failed. From the feedback:")
		for _, l := range lines {
			fmt.Fprintf(stdout, "    %s\n", l)
		}
	}

	attempt, ok, err := milestone.Next(dir)
	if err != nil {
		return err
	}
	if !ok {
		say("Everything this milestone asks for is already in place.")
		fmt.Fprintln(stdout, "RUNR_STATUS: done")
		return nil
	}
	for _, step := range attempt {
		if step.Old != "" {
			say("Reading %s", step.File)
		}
		say("%s", step.Says)
		if err := step.Apply(dir); err != nil {
			return err
		}
		if step.Old == "" {
			say("Created %s (%d lines)", step.File, strings.Count(step.New, "\n"))
			continue
		}
		say("Edited %s:", step.File)
		for _, l := range strings.Split(strings.TrimRight(step.New, "\n"), "\n") {
			fmt.Fprintf(stdout, "    + %s\n", l)
		}
	}
	// Like many agents, this one believes one edit finishes the job; runr's
	// verify command decides whether it did.
	say("Done.")
	fmt.Fprintln(stdout, "RUNR_STATUS: done")
	return nil
}

// feedback picks the lines of a test failure out of the prompt, whatever
// wording runr puts around them, and at most a handful of them.
func feedback(prompt string) []string {
	var lines []string
	sc := bufio.NewScanner(strings.NewReader(prompt))
	sc.Buffer(make([]byte, 64*1024), 1024*1024)
	for sc.Scan() {
		l := strings.TrimSpace(sc.Text())
		if strings.HasPrefix(l, "--- FAIL") || strings.HasPrefix(l, "panic:") || strings.Contains(l, ", want ") {
			lines = append(lines, l)
		}
		if len(lines) == 6 {
			break
		}
	}
	return lines
}

func orDash(s string) string {
	if s == "" {
		return "-"
	}
	return s
}
