-- cinder_attach_lock_volume (0003) returns the volume's columns on every row, once per
-- live attachment, and the service decoded them each time: on a volume shared by 64
-- hosts that was 64 decodes per write where one is needed, done while the volume's row
-- lock is held. This function takes the same lock and the same arguments and returns the
-- same columns, but the volume only once, in the first row (its attachment columns
-- null), then one row per live attachment (its volume columns null); the attachments are
-- still read by a statement of their own after the lock is held. A new name rather than a
-- replacement: processes of an earlier version still running beside one that applied
-- this migration keep calling 0003's function and getting the rows they expect.
create function cinder_attach_lock_volume_rows(
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
           null::uuid, null::uuid, null::text, null::text, null::text, null::text, null::text
      from volumes v
     where v.id = locked;
    return query
    select null::uuid, null::text, null::text, null::text, null::boolean, null::bigint,
           null::uuid, null::boolean, null::boolean, null::boolean, null::boolean,
           null::text, null::boolean, null::boolean,
           a.id, a.volume_id, a.instance_uuid, a.attach_status, a.attach_mode, a.attached_host,
           a.connection_info
      from volume_attachment a
     where a.volume_id = locked and a.deleted = false
     order by a.created_at, a.id;
end $$;
