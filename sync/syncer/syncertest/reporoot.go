package syncertest

import (
	"errors"
	"fmt"
	"os"
	"path/filepath"
)

// RepoRoot finds the repository from the working directory: the nearest
// directory holding go.mod, for the drivers (bench, chaos) that build the
// binary and run the deployment scripts from it.
func RepoRoot() (string, error) {
	dir, err := os.Getwd()
	if err != nil {
		return "", fmt.Errorf("finding the repository: %w", err)
	}
	for {
		if _, err := os.Stat(filepath.Join(dir, "go.mod")); err == nil {
			return dir, nil
		}
		parent := filepath.Dir(dir)
		if parent == dir {
			return "", errors.New("run from inside the usersync repository")
		}
		dir = parent
	}
}
