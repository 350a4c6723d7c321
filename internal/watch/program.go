package watch

import (
	"context"
	"errors"
	"io"

	tea "github.com/charmbracelet/bubbletea"
)

// Show shows the dashboard on the terminal of in and out until the user
// quits; quitting leaves every run as it is.
func Show(ctx context.Context, in io.Reader, out io.Writer, opts Options) error {
	p := tea.NewProgram(New(opts), tea.WithContext(ctx), tea.WithInput(in), tea.WithOutput(out), tea.WithAltScreen())
	_, err := p.Run()
	if opts.Source != nil {
		opts.Source.Close()
	}
	// Ctrl+C, SIGINT or SIGTERM, or the caller's context: the dashboard
	// ends as when q is pressed.
	if errors.Is(err, tea.ErrInterrupted) || errors.Is(err, tea.ErrProgramKilled) || errors.Is(err, context.Canceled) {
		return nil
	}
	return err
}
