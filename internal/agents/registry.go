package agents

import (
	"sort"
	"strings"

	"github.com/runr-dev/runr/internal/stopreasons"
)

// adapters are the agents runr knows, in the order docs present them: the
// one list of agent kinds. Everything else that lists kinds (config
// validation, --agent's help and completion, init's detection, the
// nested-session variables) derives from it; adding an agent is its
// adapter's file and its line here.
var adapters = []Adapter{
	claudeAdapter{},
	codexAdapter{},
	geminiAdapter{},
	opencodeAdapter{},
	aiderAdapter{},
	qwenAdapter{},
	commandAdapter{},
}

// Kinds lists the agent kinds runr knows, in the order docs present them.
func Kinds() []string {
	kinds := make([]string, len(adapters))
	for i, a := range adapters {
		kinds[i] = a.Kind()
	}
	return kinds
}

// Lookup returns the adapter for kind, or a config_invalid error naming the
// kinds there are.
func Lookup(kind string) (Adapter, error) {
	if a, ok := lookup(kind); ok {
		return a, nil
	}
	known := Kinds()
	sort.Strings(known)
	return nil, stopreasons.Errorf(stopreasons.ConfigInvalid,
		"agent.kind %q is not a known agent: use one of %s", kind, strings.Join(known, ", "))
}

// lookup returns the adapter for kind, and whether there is one.
func lookup(kind string) (Adapter, bool) {
	for _, a := range adapters {
		if a.Kind() == kind {
			return a, true
		}
	}
	return nil, false
}

// GenAIProvider is gen_ai.provider.name for the calls of an agent of kind:
// its adapter's, else (a kind runr does not know, read from an old record)
// the kind itself.
func GenAIProvider(kind string) string {
	if a, ok := lookup(kind); ok {
		return a.GenAIProvider()
	}
	return kind
}
