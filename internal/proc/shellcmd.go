package proc

import "strings"

// ShellBuiltin reports whether word, the first word of a `sh -c` command,
// is a shell builtin or keyword, which names no program.
func ShellBuiltin(word string) bool { return shellBuiltins[word] }

// shellBuiltins are first words of a `sh -c` command that name no program.
var shellBuiltins = map[string]bool{
	"!": true, ".": true, ":": true, "[": true, "[[": true, "{": true, "(": true,
	"alias": true, "break": true, "case": true, "cd": true, "command": true, "continue": true,
	"echo": true, "eval": true, "exec": true, "exit": true, "export": true, "false": true,
	"for": true, "if": true, "local": true, "printf": true, "pwd": true, "read": true,
	"readonly": true, "return": true, "set": true, "shift": true, "source": true, "test": true,
	"time": true, "times": true, "trap": true, "true": true, "type": true, "ulimit": true,
	"umask": true, "unset": true, "until": true, "wait": true, "while": true,
	"do": true, "done": true, "then": true, "else": true, "elif": true, "fi": true, "esac": true,
	"function": true, "select": true, "let": true, "declare": true, "typeset": true, "getopts": true,
	"hash": true, "builtin": true, "shopt": true,
}

// CommandProgram is the program a `sh -c` command line starts, when that can
// be told without a shell: the first word after any VAR=value assignments,
// unless it is a shell builtin or keyword or holds what the shell would
// expand or interpret ($, quotes, globs, redirections, ...). "" otherwise:
// such a command is left to the shell.
func CommandProgram(cmd string) string {
	_, raw, rest := shellWord(cmd)
	for {
		name, _, ok := strings.Cut(raw, "=")
		if !ok || !isShellName(name) {
			break
		}
		_, raw, rest = shellWord(rest)
	}
	if raw == "" || shellBuiltins[raw] || strings.ContainsAny(raw, "$`'\"\\*?[]{}()<>|&;=~!#\n") {
		return ""
	}
	return raw
}

// FirstProgram is the program a shell command line starts with, after any
// VAR=value assignments. Quotes are honoured ("./my tool" is one word);
// anything fancier (expansions, subshells) is not a program to look up.
func FirstProgram(cmd string) string {
	rest := cmd
	for {
		word, raw, next := shellWord(rest)
		if raw == "" {
			return ""
		}
		if name, _, ok := strings.Cut(raw, "="); ok && isShellName(name) {
			rest = next
			continue
		}
		return word
	}
}

// shellWord splits the first word off s: the word with its quotes removed,
// the word as written, and what follows it.
func shellWord(s string) (word, raw, rest string) {
	s = strings.TrimLeft(s, " \t")
	var b strings.Builder
	var quote rune
	for i, c := range s {
		switch {
		case quote != 0 && c == quote:
			quote = 0
		case quote != 0:
			b.WriteRune(c)
		case c == '\'' || c == '"':
			quote = c
		case c == ' ' || c == '\t':
			return b.String(), s[:i], s[i:]
		default:
			b.WriteRune(c)
		}
	}
	return b.String(), s, ""
}

func isShellName(s string) bool {
	if s == "" || s[0] >= '0' && s[0] <= '9' {
		return false
	}
	for _, c := range s {
		if !(c == '_' || c >= 'a' && c <= 'z' || c >= 'A' && c <= 'Z' || c >= '0' && c <= '9') {
			return false
		}
	}
	return true
}
