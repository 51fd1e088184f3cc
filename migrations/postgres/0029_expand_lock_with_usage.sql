-- The attachment writes build their events' payload (Cinder's volume usage) in the
-- service from the rows their lock read, instead of a statement of their own that
-- re-reads the volume, its metadata and its attachments after each write (issue 64).
-- This function takes the lock 0010's does, with the same arguments and one more, the
-- write's time, and returns the same rows with the rest of what the payload shows: on
-- the volume's row its usage fields, its live metadata as JSON and the write's time as
-- JSON; on each attachment's row its mountpoint and times as JSON. Times and metadata
-- are rendered here, by the same to_json the outbox's own payload statement uses, so
-- both give the same text. A new function beside 0010's: processes of 0.3.0 keep
-- calling that one.
create function cinder_attach_lock_volume_usage(
    volume uuid, attachment uuid, spec_true text, max_key text, single_writer_key text,
    written_at timestamptz)
returns table (
    id uuid, status text, attach_status text, migration_status text, multiattach boolean,
    size bigint, volume_type_id uuid, encrypted boolean, in_group boolean,
    type_multiattach boolean, type_cacheable boolean, type_max_attachments text,
    type_single_writer boolean, attached_mode_recorded boolean,
    project_id text, host text, user_id text, availability_zone text, display_name text,
    created_at_json text, snapshot_id uuid, metadata_json text, written_at_json text,
    a_id uuid, a_volume_id uuid, a_instance_uuid text, a_attach_status text,
    a_attach_mode text, a_attached_host text, a_connection_info text,
    a_mountpoint text, a_attach_time_json text, a_detach_time_json text)
language plpgsql volatile as $$
#variable_conflict use_column
declare
    locked uuid;
begin
    if attachment is null then
        select v.id into locked from volumes v
         where v.id = volume and v.deleted = false for update;
    else
        select v.id into locked from volume_attachment a join volumes v on v.id = a.volume_id
         where a.id = attachment and a.deleted = false and v.deleted = false for update of v;
    end if;
    if locked is null then
        return;
    end if;
    return query
    select v.id, v.status, v.attach_status, v.migration_status, v.multiattach, v.size,
           v.volume_type_id, v.encryption_key_id is not null,
           v.group_id is not null or v.consistencygroup_id is not null,
           coalesce((select s.value = spec_true from volume_type_extra_specs s
                      where s.volume_type_id = v.volume_type_id and s.key = 'multiattach'
                        and s.deleted = false), false),
           coalesce((select s.value = spec_true from volume_type_extra_specs s
                      where s.volume_type_id = v.volume_type_id and s.key = 'cacheable'
                        and s.deleted = false), false),
           (select s.value from volume_type_extra_specs s
             where s.volume_type_id = v.volume_type_id and s.key = max_key
               and s.deleted = false),
           coalesce((select s.value = spec_true from volume_type_extra_specs s
                      where s.volume_type_id = v.volume_type_id and s.key = single_writer_key
                        and s.deleted = false), false),
           exists (select 1 from volume_admin_metadata m
                    where m.volume_id = v.id and m.key = 'attached_mode' and m.deleted = false),
           v.project_id, v.host, v.user_id, v.availability_zone, v.display_name,
           to_json(v.created_at)::text, v.snapshot_id,
           coalesce((select json_object_agg(m.key, m.value) from volume_metadata m
                      where m.volume_id = v.id and m.deleted = false), '{}'::json)::text,
           to_json(written_at)::text,
           null::uuid, null::uuid, null::text, null::text, null::text, null::text, null::text,
           null::text, null::text, null::text
      from volumes v
     where v.id = locked;
    return query
    select null::uuid, null::text, null::text, null::text, null::boolean, null::bigint,
           null::uuid, null::boolean, null::boolean, null::boolean, null::boolean,
           null::text, null::boolean, null::boolean,
           null::text, null::text, null::text, null::text, null::text,
           null::text, null::uuid, null::text, null::text,
           a.id, a.volume_id, a.instance_uuid, a.attach_status, a.attach_mode, a.attached_host,
           a.connection_info, a.mountpoint, to_json(a.attach_time)::text,
           to_json(a.detach_time)::text
      from volume_attachment a
     where a.volume_id = locked and a.deleted = false
     order by a.created_at, a.id;
end $$;
