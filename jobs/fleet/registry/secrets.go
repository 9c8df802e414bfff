package registry

import (
	"context"
	"errors"
	"fmt"
	"maps"
	"os"
	"path/filepath"
	"regexp"
	"strings"

	"github.com/usersync/usersync/jobs/fleet/config"
	"github.com/usersync/usersync/sync/secret"
)

// A registered account's PII key is never stored: its row names where the
// worker finds it, a file or a variable of the worker's own environment.
const (
	PIIKeyFile = "USERSYNC_PII_KEY_FILE"
	PIIKeyEnv  = "USERSYNC_PII_KEY_ENV"
)

var envName = regexp.MustCompile(`^[A-Za-z_][A-Za-z0-9_]*$`)

// PIIKeyWhere adds to vals where the account's PII key is, from
// --pii-key-file path (made absolute: the worker runs elsewhere) or
// --pii-key-env name.
func PIIKeyWhere(path, name string, vals, sources map[string]string) error {
	switch {
	case path != "" && name != "":
		return errors.New("give --pii-key-file or --pii-key-env, not both")
	case path != "":
		abs, err := filepath.Abs(path)
		if err != nil {
			return fmt.Errorf("--pii-key-file: %w", err)
		}
		vals[PIIKeyFile], sources["USERSYNC_PII_KEY"] = abs, "--pii-key-file"
	case name != "":
		if !envName.MatchString(name) {
			return fmt.Errorf("--pii-key-env: %q is not a variable name", name)
		}
		vals[PIIKeyEnv], sources["USERSYNC_PII_KEY"] = name, "--pii-key-env"
	}
	return nil
}

// storedSecret says whether a stored setting is a secret, which the
// registry holds sealed.
func storedSecret(env string) bool {
	s, ok := config.ByEnv(env)
	return ok && s.Secret && s.Scope == config.PerAccount
}

// noSecretsKey is the error of an account whose secrets need the key.
func noSecretsKey(name string) error {
	return fmt.Errorf("account %s: its secrets are encrypted; set USERSYNC_SECRETS_KEY_FILE (openssl rand -hex 32 > FILE) or USERSYNC_SECRETS_KEY", name)
}

// sealSecrets returns vals with every secret sealed with key for account
// name, where it is stored; without a key an account with a secret is
// refused.
func sealSecrets(key *secret.Key, name string, vals map[string]string) (map[string]string, error) {
	out := maps.Clone(vals)
	for k, v := range vals {
		if !storedSecret(k) || v == "" || secret.IsSealed(v) {
			continue
		}
		if key == nil {
			return nil, noSecretsKey(name)
		}
		s, err := key.Seal(secret.Bind("account", name, k), v)
		if err != nil {
			return nil, fmt.Errorf("account %s: sealing %s: %w", name, k, err)
		}
		out[k] = s
	}
	return out, nil
}

// openSettings is account name's stored settings as config.ForAccount
// takes them: its secrets opened with USERSYNC_SECRETS_KEY (a plain-text
// one, stored by an earlier release, as it is), its PII key read from the
// file or variable its row names. Errors are one line naming the setting.
func (f *Fleet) openSettings(name string, stored map[string]string) (map[string]string, error) {
	key := f.Config.SecretsKey
	out := maps.Clone(stored)
	for k, v := range stored {
		if !secret.IsSealed(v) {
			continue
		}
		if key == nil {
			return nil, noSecretsKey(name)
		}
		p, err := key.Open(secret.Bind("account", name, k), v)
		var wk *secret.WrongKeyError
		switch {
		case errors.As(err, &wk):
			return nil, fmt.Errorf("account %s: its secrets are sealed with key id %s, USERSYNC_SECRETS_KEY is key id %s (after a rotation: usersync accounts rekey --old-key-file)", name, wk.Sealed, wk.Have)
		case err != nil:
			return nil, fmt.Errorf("account %s: stored %s: %w", name, k, err)
		}
		out[k] = p
	}
	delete(out, PIIKeyFile)
	delete(out, PIIKeyEnv)
	switch {
	case stored[PIIKeyFile] != "":
		v, err := ReadFile(stored[PIIKeyFile])
		if err != nil {
			return nil, fmt.Errorf("account %s: %s: %w", name, PIIKeyFile, err)
		}
		out["USERSYNC_PII_KEY"] = v
	case stored[PIIKeyEnv] != "":
		v := f.Getenv(stored[PIIKeyEnv])
		if v == "" {
			return nil, fmt.Errorf("account %s: %s names %s, which is not set in this environment", name, PIIKeyEnv, stored[PIIKeyEnv])
		}
		out["USERSYNC_PII_KEY"] = v
	}
	return out, nil
}

// ReadFile reads a secret's or a key's file, its line end trimmed; the
// error never holds what the file holds.
func ReadFile(path string) (string, error) {
	b, err := os.ReadFile(path) //nolint:gosec // G304: the operator names the file
	if err != nil {
		var pe *os.PathError
		if errors.As(err, &pe) {
			err = pe.Err
		}
		return "", fmt.Errorf("reading %s: %w", path, err)
	}
	v := strings.TrimRight(string(b), "\r\n")
	if v == "" {
		return "", fmt.Errorf("%s is empty", path)
	}
	return v, nil
}

// storedNotices are what an account's row stored by an earlier release
// asks of the operator: its PII key moved out of the database, its secrets
// sealed.
func storedNotices(name string, stored map[string]string) []string {
	var out []string
	if stored["USERSYNC_PII_KEY"] != "" {
		out = append(out, fmt.Sprintf("account %s: its PII key is stored in the database (by an earlier release); write it to a file the worker reads and run usersync accounts set %s --pii-key-file PATH, which removes it", name, name))
	}
	for k, v := range stored {
		if storedSecret(k) && k != "USERSYNC_PII_KEY" && v != "" && !secret.IsSealed(v) {
			out = append(out, fmt.Sprintf("account %s: its secrets are stored in clear (by an earlier release); set USERSYNC_SECRETS_KEY_FILE and run usersync accounts rekey", name))
			break
		}
	}
	return out
}

// Notices are the stored notices of every registered account; a registry
// that cannot be read gives none (the other checks say why).
func (f *Fleet) Notices(ctx context.Context) []string {
	list, err := f.Reg.List(ctx)
	if err != nil {
		return nil
	}
	var out []string
	for _, a := range list {
		out = append(out, storedNotices(a.Name, a.Settings)...)
	}
	return out
}
