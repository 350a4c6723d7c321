package worker

import (
	"fmt"
	"os"
	"path/filepath"
	"strings"
)

// findProgram resolves name the way a shell would, but in the PATH of the
// environment the process will get (env), not necessarily runr's own. A name
// with a slash is used as given; starting it reports whether it exists.
func findProgram(name string, env []string) (string, error) {
	if strings.Contains(name, "/") {
		return name, nil
	}
	pathList := os.Getenv("PATH")
	if env != nil {
		pathList = ""
		for _, kv := range env {
			if v, ok := strings.CutPrefix(kv, "PATH="); ok {
				pathList = v // the last one wins, as in the child
			}
		}
	}
	for _, dir := range filepath.SplitList(pathList) {
		// Like os/exec, never pick a program from a relative directory (the
		// current one included) by accident.
		if !filepath.IsAbs(dir) {
			continue
		}
		p := filepath.Join(dir, name)
		if fi, err := os.Stat(p); err == nil && fi.Mode().IsRegular() && fi.Mode().Perm()&0o111 != 0 {
			return p, nil
		}
	}
	return "", fmt.Errorf("run %s: %w (not in PATH %q); install it or give its full path", name, ErrNotFound, pathList)
}
