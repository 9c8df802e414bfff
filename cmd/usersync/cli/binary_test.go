package cli

import (
	"os"
	"os/exec"
	"path/filepath"
	"sync"
	"testing"
)

var (
	buildOnce sync.Once
	builtPath string
	buildErr  error
)

// binary builds cmd/usersync once per test process, the way the Makefile
// and the Dockerfile do (CGO_ENABLED=0), and returns its path.
func binary(t *testing.T) string {
	t.Helper()
	buildOnce.Do(func() {
		dir, err := os.MkdirTemp("", "usersync-bin")
		if err != nil {
			buildErr = err
			return
		}
		builtPath = filepath.Join(dir, "usersync")
		cmd := exec.Command("go", "build", "-trimpath", "-ldflags=-s -w", "-o", builtPath, "..")
		cmd.Env = append(os.Environ(), "CGO_ENABLED=0")
		if out, err := cmd.CombinedOutput(); err != nil {
			buildErr = &buildError{out: string(out), err: err}
		}
	})
	if buildErr != nil {
		t.Fatalf("building usersync: %v", buildErr)
	}
	return builtPath
}

type buildError struct {
	out string
	err error
}

func (e *buildError) Error() string { return e.err.Error() + ": " + e.out }
