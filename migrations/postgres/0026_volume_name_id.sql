-- The volume whose storage a volume uses, when not its own (Cinder's `_name_id`): a volume
-- moved while attached keeps its id, but its data is where Nova swapped the server to,
-- storage created for the temporary volume of the move.
alter table volumes add column name_id uuid;
create index volumes_name_id on volumes (name_id) where name_id is not null;
