-- One round trip to start every write to a volume or its attachments: lock the volume
-- row (given its id, or the id of one of its live attachments), then return its locked
-- columns with each live attachment (one row per attachment; one row of nulls for none).
-- The attachments are read by a second statement, after the lock is held: in READ
-- COMMITTED each statement of a volatile function takes a fresh snapshot, so an
-- attachment committed while the lock was awaited is seen, which a single statement
-- could not do (it reads the snapshot taken before it waited). The columns are those of
-- LOCKED_VOLUME_COLUMNS and LIVE_ATTACHMENTS in src/store/locks.rs, in that order.
create function cinder_attach_lock_volume(
    volume uuid, attachment uuid, spec_true text, max_key text, single_writer_key text)
returns table (
    id uuid, status text, attach_status text, migration_status text, multiattach boolean,
    size bigint, volume_type_id uuid, encrypted boolean, in_group boolean,
    type_multiattach boolean, type_cacheable boolean, type_max_attachments text,
    type_single_writer boolean, attached_mode_recorded boolean,
    a_id uuid, a_volume_id uuid, a_instance_uuid text, a_attach_status text,
    a_attach_mode text, a_attached_host text, a_connection_info text)
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
           a.id, a.volume_id, a.instance_uuid, a.attach_status, a.attach_mode, a.attached_host,
           a.connection_info
      from volumes v
      left join volume_attachment a on a.volume_id = v.id and a.deleted = false
     where v.id = locked
     order by a.created_at, a.id;
end $$;
