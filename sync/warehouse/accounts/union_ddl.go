package accounts

import (
	"context"
	"errors"
	"fmt"
	"sort"
	"strings"

	"github.com/jackc/pgx/v5"
	"github.com/jackc/pgx/v5/pgconn"

	"github.com/usersync/usersync/schema"
	"github.com/usersync/usersync/sync/warehouse/sqlfile"
)

// viewMark starts the comment of each union view: only such a view is ever
// replaced or dropped.
const viewMark = "usersync union view:"

// ViewDependentsError is a union view usersync would have to drop (no account
// left to unite, a table that left the catalog, a column whose type
// changed) while other objects depend on it: usersync never drops them
// (DROP ... CASCADE would), so the command stops and says which they are.
type ViewDependentsError struct {
	Why string
	// Dependents maps a union view (schema.view) to what depends on it,
	// as PostgreSQL describes each ("view analytics.eu_users").
	Dependents map[string][]string
}

func (e *ViewDependentsError) Error() string {
	views := make([]string, 0, len(e.Dependents))
	for v := range e.Dependents {
		views = append(views, v)
	}
	sort.Strings(views)
	var parts []string
	for _, v := range views {
		parts = append(parts, strings.Join(e.Dependents[v], ", ")+" depend(s) on "+v)
	}
	return fmt.Sprintf("union views %s, but %s: usersync never drops them, so it stopped and changed nothing; drop them (or point them elsewhere), run the command again, then make them again",
		e.Why, strings.Join(parts, "; "))
}

// ddl changes the union views of schema in tx.
type ddl struct {
	tx     pgx.Tx
	q      unionStatements
	schema string
}

func (d ddl) fill(view string) map[string]string {
	return map[string]string{"union": schema.QuoteIdentifier(d.schema), "view": schema.QuoteIdentifier(view)}
}

func (d ddl) exec(ctx context.Context, stmt string, fill map[string]string) error {
	_, err := d.tx.Exec(ctx, sqlfile.Fill(stmt, fill))
	return err
}

// ourViews maps each of usersync's views in the schema to its columns.
func (d ddl) ourViews(ctx context.Context) (map[string][]viewColumn, error) {
	rows, err := d.tx.Query(ctx, d.q.ours, d.schema, viewMark)
	if err != nil {
		return nil, fmt.Errorf("reading the union views: %w", err)
	}
	defer rows.Close()
	out := map[string][]viewColumn{}
	for rows.Next() {
		var v string
		var c viewColumn
		if err := rows.Scan(&v, &c.name, &c.typ); err != nil {
			return nil, fmt.Errorf("reading the union views: %w", err)
		}
		out[v] = append(out[v], c)
	}
	return out, rows.Err()
}

// make replaces the views in place, drops those of old no longer needed,
// stamps the schema's comment and grants role the views.
func (d ddl) make(ctx context.Context, views map[string]string, old map[string][]viewColumn, ms, vs, role string) error {
	text := schema.QuoteLiteral(unionMark + unionComment + " members:" + ms + " views:" + vs)
	if err := d.exec(ctx, d.q.createSchema, d.fill("")); err != nil {
		return fmt.Errorf("making the union views' schema: %w", err)
	}
	if err := d.exec(ctx, d.q.comment, map[string]string{"union": schema.QuoteIdentifier(d.schema), "text": text}); err != nil {
		return fmt.Errorf("making the union views' schema: %w", err)
	}
	for _, t := range schema.Tables() {
		body, ok := views[t.Name]
		if !ok {
			continue
		}
		if err := d.replace(ctx, t.Name, body, old[t.Name] != nil); err != nil {
			return err
		}
	}
	var gone []string
	for v := range old {
		if _, ok := views[v]; !ok {
			gone = append(gone, v)
		}
	}
	if err := d.drop(ctx, "are no longer needed (their tables left the catalog)", gone); err != nil {
		return err
	}
	return d.grant(ctx, role, views)
}

// replace makes view in place; when PostgreSQL cannot (a column's type
// changed), it drops the view, without CASCADE, and makes it again.
func (d ddl) replace(ctx context.Context, view, body string, exists bool) error {
	f := d.fill(view)
	f["body"], f["text"] = body, schema.QuoteLiteral(viewMark+" the accounts' "+view+", with an account column; replaced in place by usersync.")
	err := pgx.BeginFunc(ctx, d.tx, func(sp pgx.Tx) error {
		_, err := sp.Exec(ctx, sqlfile.Fill(d.q.view, f))
		return err
	})
	var pe *pgconn.PgError
	if err != nil && exists && errors.As(err, &pe) && pe.Code == "42P16" {
		if err := d.drop(ctx, "cannot be replaced in place ("+oneLine(pe.Message)+")", []string{view}); err != nil {
			return err
		}
		err = d.exec(ctx, d.q.view, f)
	}
	if err != nil {
		return fmt.Errorf("making union view %s.%s: %w", d.schema, view, err)
	}
	if err := d.exec(ctx, d.q.viewComment, f); err != nil {
		return fmt.Errorf("making union view %s.%s: %w", d.schema, view, err)
	}
	return nil
}

// drop drops views without CASCADE, unless something depends on one of
// them: then it drops none and says what (why says why they would go).
func (d ddl) drop(ctx context.Context, why string, views []string) error {
	sort.Strings(views)
	deps := map[string][]string{}
	for _, v := range views {
		rows, err := d.tx.Query(ctx, d.q.dependents, schema.QuoteIdentifier(d.schema)+"."+schema.QuoteIdentifier(v))
		if err != nil {
			return fmt.Errorf("reading what depends on union view %s.%s: %w", d.schema, v, err)
		}
		what, err := pgx.CollectRows(rows, pgx.RowTo[string])
		if err != nil {
			return fmt.Errorf("reading what depends on union view %s.%s: %w", d.schema, v, err)
		}
		if len(what) > 0 {
			deps[d.schema+"."+v] = what
		}
	}
	if len(deps) > 0 {
		return &ViewDependentsError{Why: why, Dependents: deps}
	}
	for _, v := range views {
		if err := d.exec(ctx, d.q.dropView, d.fill(v)); err != nil {
			return fmt.Errorf("dropping union view %s.%s: %w", d.schema, v, err)
		}
	}
	return nil
}

// dropAll drops the views, no account being left to unite, and the schema
// when nothing else is in it; a schema that keeps something of analysts'
// keeps its comment, stamped with the members ms.
func (d ddl) dropAll(ctx context.Context, ms string) error {
	old, err := d.ourViews(ctx)
	if err != nil {
		return err
	}
	views := make([]string, 0, len(old))
	for v := range old {
		views = append(views, v)
	}
	if err := d.drop(ctx, "are no longer needed (no account is left to unite)", views); err != nil {
		return err
	}
	err = pgx.BeginFunc(ctx, d.tx, func(sp pgx.Tx) error {
		_, err := sp.Exec(ctx, sqlfile.Fill(d.q.dropSchema, d.fill("")))
		return err
	})
	var pe *pgconn.PgError
	if errors.As(err, &pe) && pe.Code == "2BP01" {
		text := schema.QuoteLiteral(unionMark + unionComment + " members:" + ms + " views:0")
		err = d.exec(ctx, d.q.comment, map[string]string{"union": schema.QuoteIdentifier(d.schema), "text": text})
	}
	if err != nil {
		return fmt.Errorf("dropping the union views' schema %s: %w", d.schema, err)
	}
	return nil
}

// grant grants role ("" for none) the views.
func (d ddl) grant(ctx context.Context, role string, views map[string]string) error {
	if role == "" {
		return nil
	}
	f := d.fill("")
	f["role"] = schema.QuoteIdentifier(role)
	if err := d.exec(ctx, d.q.grantUsage, f); err != nil {
		return fmt.Errorf("granting %s the union views: %w", role, err)
	}
	for _, t := range schema.Tables() {
		if _, ok := views[t.Name]; !ok {
			continue
		}
		f["view"] = schema.QuoteIdentifier(t.Name)
		if err := d.exec(ctx, d.q.grantSelect, f); err != nil {
			return fmt.Errorf("granting %s the union views: %w", role, err)
		}
	}
	return nil
}

// oneLine keeps the first line of a message.
func oneLine(s string) string {
	s, _, _ = strings.Cut(s, "\n")
	return s
}
