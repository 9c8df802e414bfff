-- 0002_user_metadata: a user's meta.dataConnections (the user's connections to
-- external systems, sent when a request sets provideDataConnections), kept with the
-- user and its versions, and shown in users_current.

ALTER TABLE {{schema}}.users ADD COLUMN data_connections jsonb;
ALTER TABLE {{schema}}.user_versions ADD COLUMN data_connections jsonb;

DROP VIEW {{schema}}.users_current;
CREATE VIEW {{schema}}.users_current AS
SELECT
    u.id,
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
    r.name AS role_name,
    p.name AS profile_name,
    COALESCE(tm.team_ids, '{}') AS team_ids,
    COALESCE(tm.team_names, '{}') AS team_names,
    u.synced_at,
    u.data_connections
FROM {{schema}}.users u
LEFT JOIN {{schema}}.roles r ON r.id = u.role_id
LEFT JOIN {{schema}}.profiles p ON p.id = u.profile_id
LEFT JOIN LATERAL (
    SELECT array_agg(t.id ORDER BY t.name, t.id) AS team_ids,
           array_agg(t.name ORDER BY t.name, t.id) AS team_names
    FROM {{schema}}.user_teams ut
    JOIN {{schema}}.teams t ON t.id = ut.team_id AND t.deleted_at IS NULL
    WHERE ut.user_id = u.id
) tm ON true
WHERE u.deleted_at IS NULL;
