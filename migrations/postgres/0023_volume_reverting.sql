-- A volume being reverted to its latest snapshot is `reverting` (Cinder's status for
-- the `revert` action, 3.40).
alter table volumes drop constraint volumes_status_check;
alter table volumes add constraint volumes_status_check check (status in (
    'creating', 'available', 'deleting', 'error', 'error_deleting', 'error_managing',
    'managing', 'attaching', 'in-use', 'detaching', 'maintenance', 'restoring-backup',
    'error_restoring', 'reserved', 'awaiting-transfer', 'backing-up', 'error_backing-up',
    'error_extending', 'downloading', 'uploading', 'retyping', 'extending', 'reverting',
    'deleted'));
