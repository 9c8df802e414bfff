package accounts

import (
	"context"
	"embed"
	"errors"
	"fmt"
	"regexp"
	"strings"
	"time"

	"github.com/jackc/pgx/v5"
	"github.com/jackc/pgx/v5/pgconn"

	"github.com/usersync/usersync/schema"
	"github.com/usersync/usersync/sync/warehouse/sqlfile"
)

//go:embed sql/*.sql
var sqlFiles embed.FS

// Default is the name of the account the environment configures; it is
// reserved and never stored.
const Default = "default"

// SchemaSetting is the setting every stored account holds: its schema.
const SchemaSetting = "USERSYNC_SCHEMA"

var namePattern = regexp.MustCompile(`^[a-z][a-z0-9_]{0,39}$`)

// Errors of the registry; callers tell the user which name or schema.
var (
	ErrNotFound    = errors.New("no such account")
	ErrNameTaken   = errors.New("an account of that name is registered")
	ErrSchemaTaken = errors.New("another account uses that schema")
	ErrNoRegistry  = errors.New("the account registry does not exist (run usersync migrate)")
	// ErrBadSettings is a stored row whose settings are not all strings
	// (edited by hand): a *SettingsError is one.
	ErrBadSettings = errors.New("its settings are not all strings")
)

// SettingsError is a stored account whose settings are not all strings: a
// row edited by hand. The registry still lists it, with the settings that
// are strings, so that the commands that read every account (accounts list,
// status, migrate, the worker's tick) go on for the others, and accounts set
// can mend it.
type SettingsError struct {
	Account string
	// Keys are the settings whose stored values are not strings, sorted;
	// none when the settings are not a JSON object at all.
	Keys []string
}

func (e *SettingsError) Error() string {
	what := "its stored settings are not a JSON object"
	if len(e.Keys) > 0 {
		what = "stored setting(s) " + strings.Join(e.Keys, ", ") + " are not strings"
	}
	return fmt.Sprintf("account %s: %s (edited by hand?); give them again with usersync accounts set %s", e.Account, what, e.Account)
}

// Is makes a SettingsError ErrBadSettings.
func (e *SettingsError) Is(target error) bool { return target == ErrBadSettings }

// ValidateName refuses a name that is not a lower-case identifier of at most
// 40 characters, and the default account's.
func ValidateName(name string) error {
	if !namePattern.MatchString(name) {
		return fmt.Errorf("account name %q is not a lower-case identifier (a letter, then letters, digits or _; at most 40)", name)
	}
	if name == Default {
		return fmt.Errorf("account name %q is the account the USERSYNC_* environment configures; choose another", name)
	}
	return nil
}

// DBTX is what the registry needs from a pool, a connection or a
// transaction.
type DBTX interface {
	Exec(ctx context.Context, sql string, args ...any) (pgconn.CommandTag, error)
	Query(ctx context.Context, sql string, args ...any) (pgx.Rows, error)
	QueryRow(ctx context.Context, sql string, args ...any) pgx.Row
}

// Account is a registered account.
type Account struct {
	Name string
	// Settings maps a setting's variable to the account's value; it
	// holds secrets: never print it.
	Settings  map[string]string
	PausedAt  *time.Time
	CreatedAt time.Time
	UpdatedAt time.Time
	// Stamp identifies the stored settings (their md5): equal stamps, equal
	// settings.
	Stamp string
	// Invalid is set when some stored settings are not strings; Settings
	// then holds the others.
	Invalid *SettingsError
}

// Schema is the account's warehouse schema.
func (a Account) Schema() string { return a.Settings[SchemaSetting] }

type statements struct {
	createTable, createSchemaIndex, comment, exists                                         string
	insert, list, get, updateSettings, pause, resume, remove, schemaUse, dropSchema, tables string
	heads, head, sinceChange, guard                                                         string
}

func newStatements(riverSchema string) (statements, error) {
	var q statements
	st, err := sqlfile.Load(sqlFiles, "accounts", map[string]string{"schema": schema.QuoteIdentifier(riverSchema), "target": sqlfile.Later})
	if err != nil {
		return q, err
	}
	q.tables = schema.QuoteIdentifier(riverSchema) + ".accounts"
	return q, sqlfile.Assign("accounts", st, map[string]*string{"createTable": &q.createTable,
		"createSchemaIndex": &q.createSchemaIndex, "comment": &q.comment, "exists": &q.exists, "insert": &q.insert,
		"list": &q.list, "get": &q.get, "updateSettings": &q.updateSettings, "pause": &q.pause,
		"resume": &q.resume, "remove": &q.remove, "schemaUse": &q.schemaUse, "dropSchema": &q.dropSchema,
		"heads": &q.heads, "head": &q.head, "sinceChange": &q.sinceChange, "guard": &q.guard})
}

// Registry is the accounts table of one fleet.
type Registry struct {
	db    DBTX
	sql   statements
	own   ownerStatements // sql/owner.sql
	fleet string          // the River schema
}

// New returns the registry kept in riverSchema, the fleet's River schema.
func New(db DBTX, riverSchema string) (*Registry, error) {
	if err := schema.ValidateIdentifier(riverSchema); err != nil {
		return nil, err
	}
	q, err := newStatements(riverSchema)
	if err != nil {
		return nil, err
	}
	own, err := newOwnerStatements()
	if err != nil {
		return nil, err
	}
	return &Registry{db: db, sql: q, own: own, fleet: riverSchema}, nil
}

// In returns the registry reading and writing through db, a transaction
// of the same database.
func (r *Registry) In(db DBTX) *Registry {
	c := *r
	c.db = db
	return &c
}

// Migrate creates the accounts table; the River schema must exist. Call it
// inside warehouse.WithMigrationLock, after River's migrations.
func (r *Registry) Migrate(ctx context.Context) error {
	for _, s := range []string{r.sql.createTable, r.sql.createSchemaIndex, r.sql.comment} {
		if _, err := r.db.Exec(ctx, s); err != nil {
			return fmt.Errorf("creating the account registry: %w", err)
		}
	}
	return nil
}

// Exists reports whether the accounts table exists (usersync migrate made
// it).
func (r *Registry) Exists(ctx context.Context) (bool, error) {
	var ok bool
	if err := r.db.QueryRow(ctx, r.sql.exists, r.sql.tables).Scan(&ok); err != nil {
		return false, fmt.Errorf("looking for the account registry: %w", err)
	}
	return ok, nil
}

// SchemaUse says what holds a schema already.
type SchemaUse struct {
	Exists   bool // the schema exists
	Usersync bool // it holds usersync's tables (schema_migrations)
	River    bool // <schema>_river, a job queue's schema, exists
}

// SchemaUse reads what holds schema name already.
func (r *Registry) SchemaUse(ctx context.Context, name string) (SchemaUse, error) {
	var u SchemaUse
	if err := r.db.QueryRow(ctx, r.sql.schemaUse, name).Scan(&u.Exists, &u.Usersync, &u.River); err != nil {
		return u, fmt.Errorf("looking at schema %s: %w", name, err)
	}
	return u, nil
}

// DropSchema drops a schema accounts add has just made, with everything in
// it, when adding the account failed; DropAccountSchema drops a registered
// account's.
func (r *Registry) DropSchema(ctx context.Context, name string) error {
	if err := schema.ValidateIdentifier(name); err != nil {
		return err
	}
	if _, err := r.db.Exec(ctx, sqlfile.Fill(r.sql.dropSchema, map[string]string{"target": schema.QuoteIdentifier(name)})); err != nil {
		return fmt.Errorf("dropping schema %s: %w", name, err)
	}
	return nil
}
