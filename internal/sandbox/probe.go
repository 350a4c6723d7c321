package sandbox

import (
	"context"
	"errors"
	"fmt"
	"strings"
	"syscall"

	"github.com/runr-dev/runr/internal/proc"
)

// ProbeNamespaces starts the helper through worker in a user and mount
// namespace of its own, as a confined call would be, and has it bind
// readOnly read-only and check it. nil means the setup works; an error
// wrapping ErrNamespacesRefused means the kernel refused the namespaces.
func ProbeNamespaces(ctx context.Context, helper, dir string, readOnly []string) error {
	wrap, err := Wrap(helper, Policy{Probe: true, ReadOnly: readOnly})
	if err != nil {
		return err
	}
	out, err := proc.Probe(ctx, proc.Spec{Argv: wrap[:3], Dir: dir, Namespaces: true})
	if errors.Is(err, proc.ErrNamespaces) {
		var errno syscall.Errno
		if errors.As(err, &errno) {
			return fmt.Errorf("%w: clone: %v", ErrNamespacesRefused, errno)
		}
		return fmt.Errorf("%w: %v", ErrNamespacesRefused, err)
	}
	if err != nil {
		msg := err.Error()
		if i := strings.Index(msg, ErrorPrefix); i >= 0 {
			msg = msg[i+len(ErrorPrefix):]
		}
		return errors.New("the namespace setup failed: " + msg)
	}
	if out != "ok" {
		return fmt.Errorf("the namespace setup answered %q, not ok", out)
	}
	return nil
}
