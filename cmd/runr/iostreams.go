package main

import (
	"io"
	"os"

	"github.com/fatih/color"
	"github.com/mattn/go-isatty"
	"golang.org/x/sys/unix"
)

// IOStreams owns the standard streams and decides colour and terminal
// features per stream: stdout may be a pipe while stderr is a terminal.
type IOStreams struct {
	In  io.Reader
	Out io.Writer
	Err io.Writer

	OutTTY bool
	ErrTTY bool
	// NoColor is set by NO_COLOR or --no-color.
	NoColor bool
	// Width is stderr's width in columns when it is a terminal whose size
	// runr cannot ask (a test); 0 asks the terminal.
	Width   int
	Environ []string
}

// DefaultStreams are the process's own streams.
func DefaultStreams() *IOStreams {
	s := &IOStreams{
		In:      os.Stdin,
		Out:     os.Stdout,
		Err:     os.Stderr,
		OutTTY:  isTerminal(os.Stdout),
		ErrTTY:  isTerminal(os.Stderr),
		Environ: os.Environ(),
	}
	if _, ok := os.LookupEnv("NO_COLOR"); ok {
		s.NoColor = true
	}
	return s
}

func isTerminal(f *os.File) bool {
	return isatty.IsTerminal(f.Fd()) || isatty.IsCygwinTerminal(f.Fd())
}

// ColorOut reports whether stdout gets colour.
func (s *IOStreams) ColorOut() bool { return s.OutTTY && !s.NoColor }

// ColorErr reports whether stderr gets colour.
func (s *IOStreams) ColorErr() bool { return s.ErrTTY && !s.NoColor }

// Painter colours text for one stream, or leaves it plain.
type Painter struct{ on bool }

func (p Painter) paint(attrs []color.Attribute, s string) string {
	if !p.on {
		return s
	}
	c := color.New(attrs...)
	c.EnableColor()
	return c.Sprint(s)
}

// Bold, Green, Yellow, Red, Dim and Cyan paint s when colour is on.
func (p Painter) Bold(s string) string   { return p.paint([]color.Attribute{color.Bold}, s) }
func (p Painter) Green(s string) string  { return p.paint([]color.Attribute{color.FgGreen}, s) }
func (p Painter) Yellow(s string) string { return p.paint([]color.Attribute{color.FgYellow}, s) }
func (p Painter) Red(s string) string    { return p.paint([]color.Attribute{color.FgRed}, s) }
func (p Painter) Dim(s string) string    { return p.paint([]color.Attribute{color.Faint}, s) }
func (p Painter) Cyan(s string) string   { return p.paint([]color.Attribute{color.FgCyan}, s) }

// OutPainter and ErrPainter colour for stdout and stderr.
func (s *IOStreams) OutPainter() Painter { return Painter{on: s.ColorOut()} }
func (s *IOStreams) ErrPainter() Painter { return Painter{on: s.ColorErr()} }

// ErrWidth is the width of the terminal on stderr, 0 when unknown.
func (s *IOStreams) ErrWidth() int {
	if s.Width > 0 {
		return s.Width
	}
	if f, ok := s.Err.(*os.File); ok {
		if ws, err := unix.IoctlGetWinsize(int(f.Fd()), unix.TIOCGWINSZ); err == nil {
			return int(ws.Col)
		}
	}
	return 0
}
