-- 0003_lean_users: a backfill writes each user once.
--
-- History: the current version of each user now lives in its users row
-- (version_id, version_valid_from, version_run_id); user_version_history keeps
-- the superseded versions, and the view user_versions unites both with the
-- columns and meaning user_versions always had. A user seen for the first time
-- costs one row instead of two.
--
-- Linkage: each to-many relationship of the catalog besides teams is a
-- bigint[] column of users (mailbox_ids, recipient_ids, ...), and linkage the
-- catalog has no column for goes to users.other_relationships; the view
-- user_relationships unnests them with the columns and meaning the table had.
-- A user costs one row instead of one per related id. user_teams stays a table.

ALTER TABLE {{schema}}.user_versions RENAME TO user_version_history;
ALTER INDEX {{schema}}.user_versions_user_id_valid_from RENAME TO user_version_history_user_id_valid_from;
DROP INDEX {{schema}}.user_versions_one_open;

ALTER TABLE {{schema}}.users
    ADD COLUMN version_id bigint,
    ADD COLUMN version_valid_from timestamptz,
    ADD COLUMN version_run_id bigint,
    ADD COLUMN content_category_ids bigint[],
    ADD COLUMN content_category_ownership_ids bigint[],
    ADD COLUMN direct_assigned_team_ids bigint[],
    ADD COLUMN role_assigned_team_ids bigint[],
    ADD COLUMN mailbox_ids bigint[],
    ADD COLUMN recipient_ids bigint[],
    ADD COLUMN outbound_voicemail_ids bigint[],
    ADD COLUMN voicemail_prompt_ids bigint[],
    ADD COLUMN other_relationships jsonb;

-- The open version of each user moves into its row.
UPDATE {{schema}}.users u
SET version_id = v.version_id, version_valid_from = v.valid_from, version_run_id = v.run_id
FROM {{schema}}.user_version_history v
WHERE v.user_id = u.id AND v.valid_to IS NULL;
DELETE FROM {{schema}}.user_version_history WHERE valid_to IS NULL;

-- New versions take their ids from the same sequence as before.
DO $$
BEGIN
    EXECUTE format('ALTER TABLE %s ALTER COLUMN version_id SET DEFAULT nextval(%L)',
        '{{schema}}.users', pg_get_serial_sequence('{{schema}}.user_version_history', 'version_id'));
END
$$;
-- A user without an open version (none is expected) starts one now.
UPDATE {{schema}}.users SET version_id = DEFAULT, version_valid_from = synced_at WHERE version_id IS NULL;
ALTER TABLE {{schema}}.users
    ALTER COLUMN version_id SET NOT NULL,
    ALTER COLUMN version_valid_from SET NOT NULL,
    ALTER COLUMN version_valid_from SET DEFAULT now();

-- The linkage moves into the users' rows.
UPDATE {{schema}}.users u SET
    content_category_ids = l.content_category_ids,
    content_category_ownership_ids = l.content_category_ownership_ids,
    direct_assigned_team_ids = l.direct_assigned_team_ids,
    role_assigned_team_ids = l.role_assigned_team_ids,
    mailbox_ids = l.mailbox_ids,
    recipient_ids = l.recipient_ids,
    outbound_voicemail_ids = l.outbound_voicemail_ids,
    voicemail_prompt_ids = l.voicemail_prompt_ids
FROM (
    SELECT user_id,
        array_agg(related_id ORDER BY related_id) FILTER (WHERE relationship = 'contentCategories' AND related_type = 'contentCategory') AS content_category_ids,
        array_agg(related_id ORDER BY related_id) FILTER (WHERE relationship = 'contentCategoryOwnerships' AND related_type = 'contentCategoryOwnership') AS content_category_ownership_ids,
        array_agg(related_id ORDER BY related_id) FILTER (WHERE relationship = 'directAssignedTeams' AND related_type = 'team') AS direct_assigned_team_ids,
        array_agg(related_id ORDER BY related_id) FILTER (WHERE relationship = 'roleAssignedTeams' AND related_type = 'team') AS role_assigned_team_ids,
        array_agg(related_id ORDER BY related_id) FILTER (WHERE relationship = 'mailboxes' AND related_type = 'mailbox') AS mailbox_ids,
        array_agg(related_id ORDER BY related_id) FILTER (WHERE relationship = 'recipients' AND related_type = 'recipient') AS recipient_ids,
        array_agg(related_id ORDER BY related_id) FILTER (WHERE relationship = 'outboundVoicemails' AND related_type = 'outboundVoicemail') AS outbound_voicemail_ids,
        array_agg(related_id ORDER BY related_id) FILTER (WHERE relationship = 'voicemailPrompts' AND related_type = 'voicemailPrompt') AS voicemail_prompt_ids
    FROM {{schema}}.user_relationships
    GROUP BY user_id
) l
WHERE l.user_id = u.id;

UPDATE {{schema}}.users u SET other_relationships = o.links
FROM (
    SELECT user_id, jsonb_object_agg(relationship, ids) AS links
    FROM (
        SELECT user_id, relationship,
               jsonb_agg(jsonb_build_object('type', related_type, 'id', related_id) ORDER BY related_type, related_id) AS ids
        FROM {{schema}}.user_relationships
        WHERE (relationship, related_type) NOT IN (('contentCategories', 'contentCategory'), ('contentCategoryOwnerships', 'contentCategoryOwnership'), ('directAssignedTeams', 'team'), ('roleAssignedTeams', 'team'), ('mailboxes', 'mailbox'), ('recipients', 'recipient'), ('outboundVoicemails', 'outboundVoicemail'), ('voicemailPrompts', 'voicemailPrompt'))
        GROUP BY user_id, relationship
    ) r
    GROUP BY user_id
) o
WHERE o.user_id = u.id;

DROP TABLE {{schema}}.user_relationships;

CREATE VIEW {{schema}}.user_relationships AS
SELECT u.id AS user_id, l.relationship, l.related_type, l.related_id, u.synced_at
FROM {{schema}}.users u
CROSS JOIN LATERAL (
    SELECT 'contentCategories'::text, 'contentCategory'::text, x FROM unnest(u.content_category_ids) AS x
    UNION ALL
    SELECT 'contentCategoryOwnerships'::text, 'contentCategoryOwnership'::text, x FROM unnest(u.content_category_ownership_ids) AS x
    UNION ALL
    SELECT 'directAssignedTeams'::text, 'team'::text, x FROM unnest(u.direct_assigned_team_ids) AS x
    UNION ALL
    SELECT 'roleAssignedTeams'::text, 'team'::text, x FROM unnest(u.role_assigned_team_ids) AS x
    UNION ALL
    SELECT 'mailboxes'::text, 'mailbox'::text, x FROM unnest(u.mailbox_ids) AS x
    UNION ALL
    SELECT 'recipients'::text, 'recipient'::text, x FROM unnest(u.recipient_ids) AS x
    UNION ALL
    SELECT 'outboundVoicemails'::text, 'outboundVoicemail'::text, x FROM unnest(u.outbound_voicemail_ids) AS x
    UNION ALL
    SELECT 'voicemailPrompts'::text, 'voicemailPrompt'::text, x FROM unnest(u.voicemail_prompt_ids) AS x
    UNION ALL
    SELECT o.key, e.value->>'type', (e.value->>'id')::bigint
    FROM jsonb_each(u.other_relationships) AS o, jsonb_array_elements(o.value) AS e
) AS l(relationship, related_type, related_id);

CREATE VIEW {{schema}}.user_versions AS
SELECT
    version_id,
    user_id,
    content_hash,
    accounts_view_id,
    calls_view_id,
    coach_recordings_view_id,
    opportunities_view_id,
    prospects_view_id,
    reports_team_perf_view_id,
    reports_view_id,
    tasks_view_id,
    teams_view_id,
    users_view_id,
    default_ruleset_id,
    activity_notifications_disabled,
    bounce_warning_email_enabled,
    daily_digest_email_enabled,
    weekly_digest_email_enabled,
    enable_voice_recordings,
    engagement_emails_enabled,
    keep_bridge_phone_connected,
    locked,
    mailbox_error_email_enabled,
    meeting_engagement_notification_enabled,
    notifications_enabled,
    oce_click_to_dial_everywhere,
    oce_mail_toolbar,
    oce_crm_email_decorating,
    oce_crm_phone_decorating,
    oce_universal_task_flow,
    oce_window_mode,
    plugin_alert_notification_enabled,
    prefers_local_presence,
    sender_notifications_excluded,
    texting_email_notifications,
    unknown_reply_email_enabled,
    voicemail_notification_enabled,
    bridge_phone,
    bridge_phone_extension,
    inbound_bridge_phone,
    inbound_bridge_phone_extension,
    controlled_tab_default,
    custom1,
    custom2,
    custom3,
    custom4,
    custom5,
    email,
    first_name,
    last_name,
    name,
    inbound_call_behavior,
    inbound_phone_type,
    inbound_voicemail_custom_message_text,
    inbound_voicemail_message_text_voice,
    inbound_voicemail_prompt_type,
    job_role_by_name,
    oce_mail_tracking_state,
    phone_country_code,
    phone_number,
    phone_type,
    preferred_voice_region,
    primary_timezone,
    secondary_timezone,
    tertiary_timezone,
    scim_external_id,
    scim_source,
    title,
    user_guid,
    username,
    created_at,
    current_sign_in_at,
    last_sign_in_at,
    password_expires_at,
    updated_at,
    duties,
    role_id,
    profile_id,
    creator_id,
    updater_id,
    mailbox_id,
    raw,
    valid_from,
    valid_to,
    run_id,
    data_connections
FROM {{schema}}.user_version_history
UNION ALL
SELECT
    u.version_id,
    u.id,
    u.content_hash,
    u.accounts_view_id,
    u.calls_view_id,
    u.coach_recordings_view_id,
    u.opportunities_view_id,
    u.prospects_view_id,
    u.reports_team_perf_view_id,
    u.reports_view_id,
    u.tasks_view_id,
    u.teams_view_id,
    u.users_view_id,
    u.default_ruleset_id,
    u.activity_notifications_disabled,
    u.bounce_warning_email_enabled,
    u.daily_digest_email_enabled,
    u.weekly_digest_email_enabled,
    u.enable_voice_recordings,
    u.engagement_emails_enabled,
    u.keep_bridge_phone_connected,
    u.locked,
    u.mailbox_error_email_enabled,
    u.meeting_engagement_notification_enabled,
    u.notifications_enabled,
    u.oce_click_to_dial_everywhere,
    u.oce_mail_toolbar,
    u.oce_crm_email_decorating,
    u.oce_crm_phone_decorating,
    u.oce_universal_task_flow,
    u.oce_window_mode,
    u.plugin_alert_notification_enabled,
    u.prefers_local_presence,
    u.sender_notifications_excluded,
    u.texting_email_notifications,
    u.unknown_reply_email_enabled,
    u.voicemail_notification_enabled,
    u.bridge_phone,
    u.bridge_phone_extension,
    u.inbound_bridge_phone,
    u.inbound_bridge_phone_extension,
    u.controlled_tab_default,
    u.custom1,
    u.custom2,
    u.custom3,
    u.custom4,
    u.custom5,
    u.email,
    u.first_name,
    u.last_name,
    u.name,
    u.inbound_call_behavior,
    u.inbound_phone_type,
    u.inbound_voicemail_custom_message_text,
    u.inbound_voicemail_message_text_voice,
    u.inbound_voicemail_prompt_type,
    u.job_role_by_name,
    u.oce_mail_tracking_state,
    u.phone_country_code,
    u.phone_number,
    u.phone_type,
    u.preferred_voice_region,
    u.primary_timezone,
    u.secondary_timezone,
    u.tertiary_timezone,
    u.scim_external_id,
    u.scim_source,
    u.title,
    u.user_guid,
    u.username,
    u.created_at,
    u.current_sign_in_at,
    u.last_sign_in_at,
    u.password_expires_at,
    u.updated_at,
    u.duties,
    u.role_id,
    u.profile_id,
    u.creator_id,
    u.updater_id,
    u.mailbox_id,
    u.raw,
    u.version_valid_from,
    NULL::timestamptz,
    u.version_run_id,
    u.data_connections
FROM {{schema}}.users u;
