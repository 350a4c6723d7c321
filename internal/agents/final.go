package agents

// FinalReporter is a Parser that knows when the CLI has printed its final
// result: the call's work is over and the process has only to exit. An
// agent that has not exited agent.result_grace after that is ended by the
// supervisor, and its result counts as if it had exited.
//
// What counts as the final result, per CLI: Claude Code's and Qwen Code's
// `result` event, Gemini CLI's `result` event, Codex's turn.completed or
// turn.failed (codex exec runs one turn). opencode (a step_finish is not
// the last step), Aider (plain text) and command agents (a RUNR_STATUS line
// may come before the program's last work) print nothing that marks the
// end, so they are never ended early.
type FinalReporter interface {
	ResultPrinted() bool
}

// ReportsResult reports whether parser p can tell that the call's final
// result was printed (ResultPrinted): a command agent's cannot.
func ReportsResult(p Parser) bool {
	if g, ok := p.(usageGuard); ok {
		p = g.Parser
	}
	_, ok := p.(FinalReporter)
	return ok
}

// ResultPrinted reports whether parser p has seen the call's final result.
func ResultPrinted(p Parser) bool {
	if g, ok := p.(usageGuard); ok {
		p = g.Parser
	}
	r, ok := p.(FinalReporter)
	return ok && r.ResultPrinted()
}

func (p *claudeParser) ResultPrinted() bool { return p.result != nil }
func (p *qwenParser) ResultPrinted() bool   { return p.result != nil }
func (p *geminiParser) ResultPrinted() bool { return p.result != nil }
func (p *codexParser) ResultPrinted() bool  { return p.completed > 0 || p.failed }
