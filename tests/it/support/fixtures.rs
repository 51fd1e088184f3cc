//! SQL fixtures that run unchanged on both dialects (string literals coerce to uuid and
//! timestamptz on Postgres; SQLite keeps them as text).

pub const VOLUME_P1: &str = "11111111-1111-4111-8111-111111111111";
pub const VOLUME_P2: &str = "22222222-2222-4222-8222-222222222222";
pub const ATTACHMENT_1: &str = "a1111111-1111-4111-8111-111111111111";
pub const ATTACHMENT_2: &str = "a2222222-2222-4222-8222-222222222222";
pub const ATTACHMENT_3: &str = "a3333333-3333-4333-8333-333333333333";
pub const ATTACHMENT_P2: &str = "a4444444-4444-4444-8444-444444444444";
pub const ATTACHMENT_DELETED: &str = "a5555555-5555-4555-8555-555555555555";
pub const INSTANCE_1: &str = "c1111111-1111-4111-8111-111111111111";
pub const INSTANCE_2: &str = "c2222222-2222-4222-8222-222222222222";

/// Project `p1` owns a multiattach volume with three live attachments (created 1, 2, 3)
/// and one soft-deleted one; project `p2` owns a volume with one attachment.
pub fn two_projects_with_attachments() -> String {
    format!(
        "
insert into volumes (id, user_id, project_id, host, size, status, attach_status,
                     volume_type_id, multiattach, created_at, deleted)
values ('{VOLUME_P1}', 'u1', 'p1', 'h@file#file', 1, 'in-use', 'attached',
        (select id from volume_types where name = '__DEFAULT__'), true,
        '2026-01-01T00:00:00+00:00', false),
       ('{VOLUME_P2}', 'u2', 'p2', 'h@file#file', 1, 'reserved', 'detached',
        (select id from volume_types where name = '__DEFAULT__'), false,
        '2026-01-01T00:00:00+00:00', false);

insert into volume_attachment (id, volume_id, instance_uuid, attached_host, mountpoint,
                               attach_time, attach_status, attach_mode, connection_info,
                               created_at, deleted)
values ('{ATTACHMENT_1}', '{VOLUME_P1}', '{INSTANCE_1}', 'cmp-1', '/dev/vdb',
        '2026-01-02T03:04:05.123456+00:00', 'attached', 'rw',
        '{{\"driver_volume_type\": \"local\", \"attachment_id\": \"{ATTACHMENT_1}\"}}',
        '2026-01-02T00:00:01+00:00', false),
       ('{ATTACHMENT_2}', '{VOLUME_P1}', '{INSTANCE_1}', null, null,
        null, 'reserved', 'null', null,
        '2026-01-02T00:00:02+00:00', false),
       ('{ATTACHMENT_3}', '{VOLUME_P1}', '{INSTANCE_2}', 'cmp-2', '/dev/vdc',
        '2026-01-02T03:04:06+00:00', 'attached', 'ro', '{{}}',
        '2026-01-02T00:00:03+00:00', false),
       ('{ATTACHMENT_DELETED}', '{VOLUME_P1}', '{INSTANCE_2}', null, null,
        null, 'detached', 'rw', null,
        '2026-01-02T00:00:04+00:00', true),
       ('{ATTACHMENT_P2}', '{VOLUME_P2}', '{INSTANCE_2}', null, null,
        null, 'reserved', 'null', null,
        '2026-01-02T00:00:05+00:00', false);
"
    )
}
