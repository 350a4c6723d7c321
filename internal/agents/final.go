package agents

// FinalReporter is a Parser that knows when the CLI has printed its final
// result: the call's work is over and the process has only to exit. An
// agent that has not exited agent.result_grace after that is ended by the
// supervisor, and its result counts as if it had exited.
//
// An adapter's parser is one when its CLI prints something that marks the
// end (its file says what); an agent whose output has no such mark is never
// ended early.
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
