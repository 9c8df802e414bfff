package jsonapi

import (
	"context"
	"errors"
	"fmt"
	"os"
	"strings"
	"sync"
)

// FileToken returns an Authenticator that sends the static token held in
// the file at path, read now and again whenever the API refuses the token
// with a 401: an operator who replaces a revoked token in the file (a
// Kubernetes Secret, a systemd credential) needs no restart. A 401 is final
// only when the file still holds the token the API refused.
func FileToken(path string) (Authenticator, error) {
	f := &fileToken{path: path}
	if _, err := f.read(); err != nil {
		return nil, err
	}
	return f, nil
}

type fileToken struct {
	path  string
	mu    sync.Mutex
	token string
}

var _ Authenticator = (*fileToken)(nil)

// read reads the file's token, keeping it for Token.
func (f *fileToken) read() (string, error) {
	b, err := os.ReadFile(f.path)
	if err != nil {
		var pe *os.PathError
		if errors.As(err, &pe) {
			err = pe.Err // the path is named once, below
		}
		return "", fmt.Errorf("reading the API token file %s: %w", f.path, err)
	}
	token := strings.TrimRight(string(b), "\r\n")
	if token == "" {
		return "", fmt.Errorf("the API token file %s is empty", f.path)
	}
	f.mu.Lock()
	defer f.mu.Unlock()
	f.token = token
	return token, nil
}

func (f *fileToken) Token(context.Context) (string, error) {
	f.mu.Lock()
	defer f.mu.Unlock()
	return f.token, nil
}

// Invalidate reads the file again after a 401: a retry is worth it when it
// now holds another token.
func (f *fileToken) Invalidate(refused string) bool {
	token, err := f.read()
	return err == nil && token != refused
}

// String hides the token from fmt verbs.
func (f *fileToken) String() string { return "FileToken(" + f.path + ")" }
