//! Cinder's default rules with `enforce_new_defaults = true` (cinder/policies/*.py).

pub const ADMIN_API: &str = "rule:admin_api";
const READER: &str = "rule:xena_system_admin_or_project_reader";
const MEMBER: &str = "rule:xena_system_admin_or_project_member";

/// `(name, check string)` for every rule the service evaluates, base rules first.
pub const DEFAULT_RULES: &[(&str, &str)] = &[
    // Base rules (cinder/policies/base.py).
    ("context_is_admin", "role:admin"),
    (
        "admin_api",
        "is_admin:True or (role:admin and is_admin_project:True)",
    ),
    (
        "admin_or_owner",
        "is_admin:True or (role:admin and is_admin_project:True) or project_id:%(project_id)s",
    ),
    (
        "xena_system_admin_or_project_reader",
        "(role:admin) or (role:reader and project_id:%(project_id)s)",
    ),
    (
        "xena_system_admin_or_project_member",
        "(role:admin) or (role:member and project_id:%(project_id)s)",
    ),
    // Volumes (cinder/policies/volumes.py).
    ("volume:create", MEMBER),
    ("volume:get", READER),
    ("volume:get_all", READER),
    ("volume:update", MEMBER),
    ("volume:delete", MEMBER),
    ("volume:force_delete", ADMIN_API),
    ("volume:multiattach", MEMBER),
    // Volume metadata (cinder/policies/volume_metadata.py).
    ("volume:get_volume_metadata", READER),
    ("volume:create_volume_metadata", MEMBER),
    ("volume:update_volume_metadata", MEMBER),
    ("volume:delete_volume_metadata", MEMBER),
    ("volume_extension:volume_image_metadata:show", READER),
    ("volume_extension:volume_image_metadata:set", MEMBER),
    ("volume_extension:volume_image_metadata:remove", MEMBER),
    ("volume_extension:volume_host_attribute", ADMIN_API),
    ("volume_extension:volume_tenant_attribute", READER),
    ("volume_extension:volume_mig_status_attribute", ADMIN_API),
    // Attachments (cinder/policies/attachments.py).
    ("volume:attachment_create", MEMBER),
    ("volume:attachment_update", MEMBER),
    ("volume:attachment_delete", MEMBER),
    ("volume:attachment_complete", MEMBER),
    ("volume:multiattach_bootable_volume", MEMBER),
    // User messages (cinder/policies/messages.py).
    ("message:get_all", READER),
    ("message:get", READER),
    ("message:delete", MEMBER),
    // Volume actions (cinder/policies/volume_actions.py).
    ("volume:retype", MEMBER),
    ("volume:extend", MEMBER),
    ("volume:revert_to_snapshot", MEMBER),
    (
        "volume_extension:volume_admin_actions:migrate_volume",
        ADMIN_API,
    ),
    (
        "volume_extension:volume_admin_actions:migrate_volume_completion",
        ADMIN_API,
    ),
    (
        "volume_extension:volume_admin_actions:extend_volume_completion",
        ADMIN_API,
    ),
    ("volume:reimage", MEMBER),
    ("volume:reimage_reserved", MEMBER),
    ("volume:update_readonly_flag", MEMBER),
    ("volume_extension:volume_actions:upload_image", MEMBER),
    ("volume_extension:volume_actions:upload_public", ADMIN_API),
    (
        "volume_extension:volume_admin_actions:reset_status",
        ADMIN_API,
    ),
    (
        "volume_extension:volume_admin_actions:force_delete",
        ADMIN_API,
    ),
    (
        "volume_extension:volume_admin_actions:force_detach",
        ADMIN_API,
    ),
    ("volume_extension:volume_actions:reserve", MEMBER),
    ("volume_extension:volume_actions:unreserve", MEMBER),
    ("volume_extension:volume_actions:begin_detaching", MEMBER),
    ("volume_extension:volume_actions:roll_detaching", MEMBER),
    ("volume_extension:volume_actions:attach", MEMBER),
    ("volume_extension:volume_actions:detach", MEMBER),
    (
        "volume_extension:volume_actions:initialize_connection",
        MEMBER,
    ),
    (
        "volume_extension:volume_actions:terminate_connection",
        MEMBER,
    ),
    // Volume types (cinder/policies/volume_type.py, type_extra_specs.py).
    ("volume_extension:type_create", ADMIN_API),
    ("volume_extension:type_update", ADMIN_API),
    ("volume_extension:type_delete", ADMIN_API),
    ("volume_extension:type_get", READER),
    ("volume_extension:type_get_all", READER),
    ("volume_extension:access_types_extra_specs", READER),
    // cinder/policies/workers.py.
    ("workers:cleanup", ADMIN_API),
    // Projects' own default types (cinder/policies/default_types.py).
    ("volume_extension:default_set_or_update", ADMIN_API),
    ("volume_extension:default_get", ADMIN_API),
    ("volume_extension:default_get_all", ADMIN_API),
    ("volume_extension:default_unset", ADMIN_API),
    ("volume_extension:access_types_qos_specs_id", ADMIN_API),
    ("volume_extension:types_extra_specs:index", READER),
    ("volume_extension:types_extra_specs:show", READER),
    ("volume_extension:types_extra_specs:create", ADMIN_API),
    ("volume_extension:types_extra_specs:update", ADMIN_API),
    ("volume_extension:types_extra_specs:delete", ADMIN_API),
    (
        "volume_extension:types_extra_specs:read_sensitive",
        ADMIN_API,
    ),
    // Group types (cinder/policies/group_types.py).
    ("group:group_types_manage", ADMIN_API),
    ("group:group_types:create", ADMIN_API),
    ("group:group_types:update", ADMIN_API),
    ("group:group_types:delete", ADMIN_API),
    ("group:access_group_types_specs", ADMIN_API),
    ("group:group_types_specs", ADMIN_API),
    ("group:group_types_specs:get", ADMIN_API),
    ("group:group_types_specs:get_all", ADMIN_API),
    ("group:group_types_specs:create", ADMIN_API),
    ("group:group_types_specs:update", ADMIN_API),
    ("group:group_types_specs:delete", ADMIN_API),
    // Groups (cinder/policies/groups.py, group_actions.py).
    ("group:get_all", READER),
    ("group:create", MEMBER),
    ("group:get", READER),
    ("group:update", MEMBER),
    ("group:group_project_attribute", ADMIN_API),
    ("group:delete", MEMBER),
    ("group:reset_status", ADMIN_API),
    // Group snapshots (cinder/policies/group_snapshots.py, group_snapshot_actions.py).
    ("group:get_all_group_snapshots", READER),
    ("group:create_group_snapshot", MEMBER),
    ("group:get_group_snapshot", READER),
    ("group:delete_group_snapshot", MEMBER),
    ("group:update_group_snapshot", MEMBER),
    ("group:group_snapshot_project_attribute", ADMIN_API),
    ("group:reset_group_snapshot_status", ADMIN_API),
    // Adoption (cinder/policies/manageable_volumes.py, manageable_snapshots.py).
    ("volume_extension:volume_manage", ADMIN_API),
    ("volume_extension:volume_unmanage", ADMIN_API),
    ("volume_extension:list_manageable", ADMIN_API),
    ("snapshot_extension:snapshot_manage", ADMIN_API),
    ("snapshot_extension:snapshot_unmanage", ADMIN_API),
    ("snapshot_extension:list_manageable", ADMIN_API),
    // Backups (cinder/policies/backups.py, backup_actions.py).
    ("backup:get_all", READER),
    ("backup:backup_project_attribute", ADMIN_API),
    ("backup:create", MEMBER),
    ("backup:get", READER),
    ("backup:update", MEMBER),
    ("backup:delete", MEMBER),
    ("backup:restore", MEMBER),
    ("backup:backup-import", ADMIN_API),
    ("backup:export-import", ADMIN_API),
    (
        "volume_extension:backup_admin_actions:reset_status",
        ADMIN_API,
    ),
    (
        "volume_extension:backup_admin_actions:force_delete",
        ADMIN_API,
    ),
    // Private types (cinder/policies/volume_access.py).
    ("volume_extension:volume_type_access", MEMBER),
    (
        "volume_extension:volume_type_access:addProjectAccess",
        ADMIN_API,
    ),
    (
        "volume_extension:volume_type_access:removeProjectAccess",
        ADMIN_API,
    ),
    (
        "volume_extension:volume_type_access:get_all_for_type",
        ADMIN_API,
    ),
    // Quotas and limits (cinder/policies/quotas.py, quota_class.py, limits.py).
    ("volume_extension:quotas:show", READER),
    ("volume_extension:quotas:update", ADMIN_API),
    ("volume_extension:quotas:delete", ADMIN_API),
    ("volume_extension:quota_classes", ADMIN_API),
    ("volume_extension:quota_classes:get", ADMIN_API),
    ("volume_extension:quota_classes:update", ADMIN_API),
    ("limits_extension:used_limits", READER),
    // Snapshots (cinder/policies/snapshots.py, snapshot_metadata.py, snapshot_actions.py).
    ("volume:create_snapshot", MEMBER),
    ("volume:get_snapshot", READER),
    ("volume:get_all_snapshots", READER),
    ("volume:update_snapshot", MEMBER),
    ("volume:delete_snapshot", MEMBER),
    ("volume_extension:extended_snapshot_attributes", READER),
    ("volume:get_snapshot_metadata", READER),
    ("volume:update_snapshot_metadata", MEMBER),
    ("volume:delete_snapshot_metadata", MEMBER),
    (
        "volume_extension:snapshot_admin_actions:reset_status",
        ADMIN_API,
    ),
    (
        "volume_extension:snapshot_admin_actions:force_delete",
        ADMIN_API,
    ),
    (
        "snapshot_extension:snapshot_actions:update_snapshot_status",
        MEMBER,
    ),
    // QoS specs (cinder/policies/qos_specs.py).
    ("volume_extension:qos_specs_manage:create", ADMIN_API),
    ("volume_extension:qos_specs_manage:get", ADMIN_API),
    ("volume_extension:qos_specs_manage:get_all", ADMIN_API),
    ("volume_extension:qos_specs_manage:update", ADMIN_API),
    ("volume_extension:qos_specs_manage:delete", ADMIN_API),
    // Volume type encryption (cinder/policies/volume_type.py) and what a volume's host
    // reads of it (cinder/policies/volumes.py).
    ("volume_extension:volume_type_encryption:create", ADMIN_API),
    ("volume_extension:volume_type_encryption:get", ADMIN_API),
    ("volume_extension:volume_type_encryption:update", ADMIN_API),
    ("volume_extension:volume_type_encryption:delete", ADMIN_API),
    ("volume_extension:volume_encryption_metadata", READER),
    // Extend of an attached volume (cinder/policies/volume_actions.py).
    ("volume:extend_attached_volume", MEMBER),
    // Admin views (cinder/policies/{services,hosts,scheduler_stats,capabilities}.py).
    ("volume_extension:services:index", ADMIN_API),
    ("volume_extension:services:update", ADMIN_API),
    ("volume:freeze_host", ADMIN_API),
    ("volume:thaw_host", ADMIN_API),
    ("volume_extension:hosts", ADMIN_API),
    ("scheduler_extension:scheduler_stats:get_pools", ADMIN_API),
    ("volume_extension:capabilities", ADMIN_API),
    // The audit trail of notification events (cinder-attach's own; admin only).
    ("cinder_attach:events:index", ADMIN_API),
    // Volume transfers (cinder/policies/volume_transfer.py).
    ("volume:create_transfer", MEMBER),
    ("volume:get_transfer", READER),
    ("volume:get_all_transfers", READER),
    ("volume:accept_transfer", MEMBER),
    ("volume:delete_transfer", MEMBER),
];
