-- Who may read an account's schema ({{schema}}): what accounts set revokes
-- from a reader role it replaces, and what usersync check reports. Filled
-- when they run: {{role}} (quoted) and {{table}}, a table of the catalog.

-- name: revokeTable
-- Revoking on a table revokes on each of its columns too.
REVOKE ALL ON {{schema}}.{{table}} FROM {{role}}

-- name: revokeSchema
REVOKE ALL ON SCHEMA {{schema}} FROM {{role}}

-- name: otherReaders
-- The roles granted SELECT on one of the tables $3 of schema $2, on the
-- table or on one of its columns, other than the reader role $1 and the
-- tables' owner, each with the tables; PUBLIC for a grant to everybody.
WITH acl AS (
	SELECT c.relname, c.relowner, x.grantee, x.privilege_type
	FROM pg_class c JOIN pg_namespace n ON n.oid = c.relnamespace, aclexplode(c.relacl) x
	WHERE n.nspname = $2 AND c.relname = ANY($3)
	UNION ALL
	SELECT c.relname, c.relowner, x.grantee, x.privilege_type
	FROM pg_class c JOIN pg_namespace n ON n.oid = c.relnamespace
	JOIN pg_attribute a ON a.attrelid = c.oid AND a.attnum > 0, aclexplode(a.attacl) x
	WHERE n.nspname = $2 AND c.relname = ANY($3))
SELECT coalesce(r.rolname, 'PUBLIC'), array_agg(DISTINCT acl.relname ORDER BY acl.relname)
FROM acl LEFT JOIN pg_roles r ON r.oid = acl.grantee
WHERE acl.privilege_type = 'SELECT' AND acl.grantee <> acl.relowner AND coalesce(r.rolname, '') <> $1
GROUP BY 1 ORDER BY 1
