-- 0007_personal_data: the personal-data policy, erasures and purges.
--
-- erasures is the audit of usersync forget: which user was erased, when, by
-- which database role, and how much was removed. It holds no personal data.
-- pii_policies records each personal-data policy a run or usersync pii apply
-- wrote under (attribute names and a key id only, never the key), and
-- pii_apply the progress of usersync pii apply, so a killed one resumes.

CREATE TABLE {{schema}}.erasures (
    erasure_id bigint GENERATED ALWAYS AS IDENTITY PRIMARY KEY,
    user_id bigint NOT NULL,
    erased_at timestamptz NOT NULL DEFAULT now(),
    erased_by text NOT NULL DEFAULT current_user,
    found boolean NOT NULL,
    versions_deleted bigint NOT NULL,
    quarantine_deleted bigint NOT NULL,
    columns_cleared bigint NOT NULL
);

CREATE TABLE {{schema}}.pii_policies (
    fingerprint text PRIMARY KEY,
    hashed text[] NOT NULL,
    dropped text[] NOT NULL,
    drop_unknown boolean NOT NULL,
    key_id text,
    first_used_at timestamptz NOT NULL DEFAULT now(),
    last_used_at timestamptz NOT NULL DEFAULT now()
);

CREATE TABLE {{schema}}.pii_apply (
    fingerprint text PRIMARY KEY,
    phase text NOT NULL,
    last_id bigint NOT NULL DEFAULT 0,
    rewritten bigint NOT NULL DEFAULT 0,
    started_at timestamptz NOT NULL DEFAULT now(),
    updated_at timestamptz NOT NULL DEFAULT now(),
    finished_at timestamptz,
    CONSTRAINT pii_apply_phase CHECK (phase IN ('users', 'user_version_history', 'quarantine', 'done'))
);
