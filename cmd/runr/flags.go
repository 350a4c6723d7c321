package main

// typedFlag is a flag kept as the text the user typed, so that its value is
// checked where the config is (a bad one is config_invalid, named with its
// flag, not a usage error from the parser), while the help still shows the
// kind of value it takes: `--time duration`, `--max-ticks int`.
type typedFlag struct {
	value *string
	kind  string
}

func (f *typedFlag) String() string {
	if f.value == nil {
		return ""
	}
	return *f.value
}

func (f *typedFlag) Set(s string) error {
	*f.value = s
	return nil
}

// Type is what the help prints after the flag's name.
func (f *typedFlag) Type() string { return f.kind }
