-- The key a backup of an encrypted volume keeps (Cinder's backups.encryption_key_id): a
-- copy of the volume's key made when the backup starts, so the backup can be restored
-- after its volume (and the volume's key) are gone; deleted with the backup.
alter table backups add column encryption_key_id text;
