package accounts

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"slices"
	"time"

	"github.com/jackc/pgx/v5"
	"github.com/jackc/pgx/v5/pgconn"
)

// Add stores a new account. Its settings must hold its schema. A taken
// name or schema is ErrNameTaken or ErrSchemaTaken.
func (r *Registry) Add(ctx context.Context, a Account) error {
	if err := ValidateName(a.Name); err != nil {
		return err
	}
	if a.Schema() == "" {
		return fmt.Errorf("adding account %s: no %s", a.Name, SchemaSetting)
	}
	b, err := json.Marshal(a.Settings)
	if err != nil {
		return fmt.Errorf("adding account %s: %w", a.Name, err)
	}
	if _, err := r.db.Exec(ctx, r.sql.insert, a.Name, b); err != nil {
		var pe *pgconn.PgError
		switch {
		case errors.As(err, &pe) && pe.Code == "23505" && pe.ConstraintName == "accounts_schema_key":
			return fmt.Errorf("adding account %s: %w", a.Name, ErrSchemaTaken)
		case errors.As(err, &pe) && pe.Code == "23505":
			return fmt.Errorf("adding account %s: %w", a.Name, ErrNameTaken)
		case errors.As(err, &pe) && pe.Code == "42P01":
			return ErrNoRegistry
		}
		return fmt.Errorf("adding account %s: %w", a.Name, err)
	}
	return nil
}

// List returns every registered account by name, those whose settings are
// not all strings included (Account.Invalid); none when the registry was
// never created (a deployment not migrated since accounts were added).
func (r *Registry) List(ctx context.Context) ([]Account, error) {
	ok, err := r.Exists(ctx)
	if err != nil || !ok {
		return nil, err
	}
	rows, err := r.db.Query(ctx, r.sql.list)
	if err != nil {
		return nil, fmt.Errorf("listing accounts: %w", err)
	}
	out, err := pgx.CollectRows(rows, scanAccount)
	if err != nil {
		return nil, fmt.Errorf("listing accounts: %w", err)
	}
	return out, nil
}

// Get returns the account name, or ErrNotFound. An account whose stored
// settings are not all strings is returned with its Invalid as the error.
func (r *Registry) Get(ctx context.Context, name string) (Account, error) {
	ok, err := r.Exists(ctx)
	if err != nil {
		return Account{}, err
	}
	if !ok {
		return Account{}, fmt.Errorf("account %s: %w", name, ErrNotFound)
	}
	rows, err := r.db.Query(ctx, r.sql.get, name)
	if err != nil {
		return Account{}, fmt.Errorf("reading account %s: %w", name, err)
	}
	a, err := pgx.CollectExactlyOneRow(rows, scanAccount)
	if errors.Is(err, pgx.ErrNoRows) {
		return Account{}, fmt.Errorf("account %s: %w", name, ErrNotFound)
	}
	if err != nil {
		return Account{}, fmt.Errorf("reading account %s: %w", name, err)
	}
	if a.Invalid != nil {
		return a, a.Invalid
	}
	return a, nil
}

func scanAccount(row pgx.CollectableRow) (Account, error) {
	var a Account
	var settings []byte
	if err := row.Scan(&a.Name, &settings, &a.PausedAt, &a.CreatedAt, &a.UpdatedAt, &a.Stamp); err != nil {
		return a, err
	}
	var raw map[string]any
	if err := json.Unmarshal(settings, &raw); err != nil {
		a.Invalid = &SettingsError{Account: a.Name}
		return a, nil
	}
	a.Settings = make(map[string]string, len(raw))
	var bad []string
	for k, v := range raw {
		if s, ok := v.(string); ok {
			a.Settings[k] = s
		} else {
			bad = append(bad, k)
		}
	}
	if len(bad) > 0 {
		slices.Sort(bad)
		a.Invalid = &SettingsError{Account: a.Name, Keys: bad}
	}
	return a, nil
}

// UpdateSettings sets the given settings of account name and removes those
// of remove, keeping the others; its schema never changes.
func (r *Registry) UpdateSettings(ctx context.Context, name string, settings map[string]string, remove ...string) error {
	b, err := json.Marshal(settings)
	if err != nil {
		return fmt.Errorf("updating account %s: %w", name, err)
	}
	remove = slices.DeleteFunc(slices.Clone(remove), func(k string) bool { return k == SchemaSetting })
	if remove == nil {
		remove = []string{}
	}
	return r.change(ctx, name, "updating", r.sql.updateSettings, b, remove)
}

// Pause marks the account paused: the worker schedules none of its work.
func (r *Registry) Pause(ctx context.Context, name string) error {
	return r.change(ctx, name, "pausing", r.sql.pause)
}

// Resume clears the account's pause.
func (r *Registry) Resume(ctx context.Context, name string) error {
	return r.change(ctx, name, "resuming", r.sql.resume)
}

// Remove deletes the account's row; its schema and snapshots stay.
func (r *Registry) Remove(ctx context.Context, name string) error {
	return r.change(ctx, name, "removing", r.sql.remove)
}

func (r *Registry) change(ctx context.Context, name, what, stmt string, args ...any) error {
	tag, err := r.db.Exec(ctx, stmt, append([]any{name}, args...)...)
	var pe *pgconn.PgError
	if errors.As(err, &pe) && pe.Code == "42P01" {
		return fmt.Errorf("account %s: %w", name, ErrNotFound)
	}
	if err != nil {
		return fmt.Errorf("%s account %s: %w", what, name, err)
	}
	if tag.RowsAffected() == 0 {
		return fmt.Errorf("account %s: %w", name, ErrNotFound)
	}
	return nil
}

// Paused reports whether the account is paused.
func (a Account) Paused() bool { return a.PausedAt != nil }

// Head is a registered account without its settings: what a reader that
// keeps what it parsed of each account needs to know whether to read it
// again.
type Head struct {
	Name, Schema string
	Paused       bool
	Stamp        string // as Account.Stamp
}

// Heads returns every registered account's Head by name; none when the
// registry was never created.
func (r *Registry) Heads(ctx context.Context) ([]Head, error) {
	rows, err := r.db.Query(ctx, r.sql.heads)
	if err != nil {
		return nil, noRegistryIsNone(fmt.Errorf("listing accounts: %w", err))
	}
	out, err := pgx.CollectRows(rows, scanHead)
	if err != nil {
		return nil, noRegistryIsNone(fmt.Errorf("listing accounts: %w", err))
	}
	return out, nil
}

// Head returns the Head of account name, or ErrNotFound.
func (r *Registry) Head(ctx context.Context, name string) (Head, error) {
	rows, err := r.db.Query(ctx, r.sql.head, name)
	if err == nil {
		var h Head
		h, err = pgx.CollectExactlyOneRow(rows, scanHead)
		if err == nil {
			return h, nil
		}
	}
	if errors.Is(err, pgx.ErrNoRows) || noRegistryIsNone(err) == nil {
		return Head{}, fmt.Errorf("account %s: %w", name, ErrNotFound)
	}
	return Head{}, fmt.Errorf("reading account %s: %w", name, err)
}

// Guard is the condition that account name is registered, not paused, and
// has the settings of stamp (Head.Stamp), to add to a statement so that
// it holds in the statement's own transaction; its named arguments are
// @guard_account and @guard_stamp.
func (r *Registry) Guard(name, stamp string) (sql string, args map[string]any) {
	return r.sql.guard, map[string]any{"guard_account": name, "guard_stamp": stamp}
}

// SinceChange is how long ago the last account was added or changed; ok is
// false when none is registered (or the registry was never made).
func (r *Registry) SinceChange(ctx context.Context) (since time.Duration, ok bool, err error) {
	var secs *float64
	if err := r.db.QueryRow(ctx, r.sql.sinceChange).Scan(&secs); err != nil {
		return 0, false, noRegistryIsNone(fmt.Errorf("reading the registry's last change: %w", err))
	}
	if secs == nil {
		return 0, false, nil
	}
	return time.Duration(*secs * float64(time.Second)), true, nil
}

func scanHead(row pgx.CollectableRow) (Head, error) {
	var h Head
	err := row.Scan(&h.Name, &h.Schema, &h.Paused, &h.Stamp)
	return h, err
}

// noRegistryIsNone is nil for the error of a registry that does not exist
// (a deployment not migrated since accounts were added: no table, or no River schema yet),
// err otherwise.
func noRegistryIsNone(err error) error {
	var pe *pgconn.PgError
	if errors.As(err, &pe) && (pe.Code == "42P01" || pe.Code == "3F000") {
		return nil
	}
	return err
}
