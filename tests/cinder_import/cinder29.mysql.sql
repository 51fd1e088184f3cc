-- Made by tests/cinder_import/make-fixture.sh: cinder==29.0.0 from PyPI, db sync,
-- then make_fixture.py through Cinder's API. Do not edit by hand.
SET FOREIGN_KEY_CHECKS=0;
CREATE TABLE `alembic_version` (
  `version_num` varchar(32) NOT NULL,
  PRIMARY KEY (`version_num`)
) ENGINE=InnoDB DEFAULT CHARSET=utf8mb4 COLLATE=utf8mb4_general_ci;
INSERT INTO `alembic_version` VALUES ('9c74c1c6971f');
CREATE TABLE `attachment_specs` (
  `created_at` datetime DEFAULT NULL,
  `updated_at` datetime DEFAULT NULL,
  `deleted_at` datetime DEFAULT NULL,
  `deleted` tinyint(1) DEFAULT NULL,
  `id` int(11) NOT NULL AUTO_INCREMENT,
  `attachment_id` varchar(36) NOT NULL,
  `key` varchar(255) DEFAULT NULL,
  `value` varchar(255) DEFAULT NULL,
  PRIMARY KEY (`id`),
  KEY `ix_attachment_specs_attachment_id` (`attachment_id`),
  CONSTRAINT `attachment_specs_ibfk_1` FOREIGN KEY (`attachment_id`) REFERENCES `volume_attachment` (`id`)
) ENGINE=InnoDB DEFAULT CHARSET=utf8mb3 COLLATE=utf8mb3_general_ci;
CREATE TABLE `backup_metadata` (
  `created_at` datetime DEFAULT NULL,
  `updated_at` datetime DEFAULT NULL,
  `deleted_at` datetime DEFAULT NULL,
  `deleted` tinyint(1) DEFAULT NULL,
  `id` int(11) NOT NULL AUTO_INCREMENT,
  `backup_id` varchar(36) NOT NULL,
  `key` varchar(255) DEFAULT NULL,
  `value` varchar(255) DEFAULT NULL,
  PRIMARY KEY (`id`),
  KEY `ix_backup_metadata_backup_id` (`backup_id`),
  CONSTRAINT `backup_metadata_ibfk_1` FOREIGN KEY (`backup_id`) REFERENCES `backups` (`id`)
) ENGINE=InnoDB DEFAULT CHARSET=utf8mb3 COLLATE=utf8mb3_general_ci;
CREATE TABLE `backups` (
  `created_at` datetime DEFAULT NULL,
  `updated_at` datetime DEFAULT NULL,
  `deleted_at` datetime DEFAULT NULL,
  `deleted` tinyint(1) DEFAULT NULL,
  `id` varchar(36) NOT NULL,
  `volume_id` varchar(36) NOT NULL,
  `user_id` varchar(255) DEFAULT NULL,
  `project_id` varchar(255) DEFAULT NULL,
  `host` varchar(255) DEFAULT NULL,
  `availability_zone` varchar(255) DEFAULT NULL,
  `display_name` varchar(255) DEFAULT NULL,
  `display_description` varchar(255) DEFAULT NULL,
  `container` varchar(255) DEFAULT NULL,
  `status` varchar(255) DEFAULT NULL,
  `fail_reason` varchar(255) DEFAULT NULL,
  `service_metadata` varchar(255) DEFAULT NULL,
  `service` varchar(255) DEFAULT NULL,
  `size` int(11) DEFAULT NULL,
  `object_count` int(11) DEFAULT NULL,
  `parent_id` varchar(36) DEFAULT NULL,
  `temp_volume_id` varchar(36) DEFAULT NULL,
  `temp_snapshot_id` varchar(36) DEFAULT NULL,
  `num_dependent_backups` int(11) DEFAULT NULL,
  `snapshot_id` varchar(36) DEFAULT NULL,
  `data_timestamp` datetime DEFAULT NULL,
  `restore_volume_id` varchar(36) DEFAULT NULL,
  `encryption_key_id` varchar(36) DEFAULT NULL,
  PRIMARY KEY (`id`),
  KEY `backups_deleted_project_id_idx` (`deleted`,`project_id`),
  CONSTRAINT `CONSTRAINT_1` CHECK (`deleted` in (0,1))
) ENGINE=InnoDB DEFAULT CHARSET=utf8mb3 COLLATE=utf8mb3_general_ci;
CREATE TABLE `cgsnapshots` (
  `created_at` datetime DEFAULT NULL,
  `updated_at` datetime DEFAULT NULL,
  `deleted_at` datetime DEFAULT NULL,
  `deleted` tinyint(1) DEFAULT NULL,
  `id` varchar(36) NOT NULL,
  `consistencygroup_id` varchar(36) NOT NULL,
  `user_id` varchar(255) DEFAULT NULL,
  `project_id` varchar(255) DEFAULT NULL,
  `name` varchar(255) DEFAULT NULL,
  `description` varchar(255) DEFAULT NULL,
  `status` varchar(255) DEFAULT NULL,
  PRIMARY KEY (`id`),
  KEY `ix_cgsnapshots_consistencygroup_id` (`consistencygroup_id`),
  CONSTRAINT `cgsnapshots_ibfk_1` FOREIGN KEY (`consistencygroup_id`) REFERENCES `consistencygroups` (`id`),
  CONSTRAINT `CONSTRAINT_1` CHECK (`deleted` in (0,1))
) ENGINE=InnoDB DEFAULT CHARSET=utf8mb3 COLLATE=utf8mb3_general_ci;
CREATE TABLE `clusters` (
  `created_at` datetime DEFAULT NULL,
  `updated_at` datetime DEFAULT NULL,
  `deleted_at` datetime DEFAULT NULL,
  `deleted` tinyint(1) DEFAULT NULL,
  `id` int(11) NOT NULL AUTO_INCREMENT,
  `name` varchar(255) NOT NULL,
  `binary` varchar(255) NOT NULL,
  `disabled` tinyint(1) DEFAULT NULL,
  `disabled_reason` varchar(255) DEFAULT NULL,
  `race_preventer` int(11) NOT NULL,
  `replication_status` varchar(36) DEFAULT NULL,
  `active_backend_id` varchar(255) DEFAULT NULL,
  `frozen` tinyint(1) NOT NULL DEFAULT 0,
  PRIMARY KEY (`id`),
  UNIQUE KEY `name` (`name`,`binary`,`race_preventer`)
) ENGINE=InnoDB DEFAULT CHARSET=utf8mb3 COLLATE=utf8mb3_general_ci;
CREATE TABLE `consistencygroups` (
  `created_at` datetime DEFAULT NULL,
  `updated_at` datetime DEFAULT NULL,
  `deleted_at` datetime DEFAULT NULL,
  `deleted` tinyint(1) DEFAULT NULL,
  `id` varchar(36) NOT NULL,
  `user_id` varchar(255) DEFAULT NULL,
  `project_id` varchar(255) DEFAULT NULL,
  `host` varchar(255) DEFAULT NULL,
  `availability_zone` varchar(255) DEFAULT NULL,
  `name` varchar(255) DEFAULT NULL,
  `description` varchar(255) DEFAULT NULL,
  `volume_type_id` varchar(255) DEFAULT NULL,
  `status` varchar(255) DEFAULT NULL,
  `cgsnapshot_id` varchar(36) DEFAULT NULL,
  `source_cgid` varchar(36) DEFAULT NULL,
  `cluster_name` varchar(255) DEFAULT NULL,
  PRIMARY KEY (`id`),
  CONSTRAINT `CONSTRAINT_1` CHECK (`deleted` in (0,1))
) ENGINE=InnoDB DEFAULT CHARSET=utf8mb3 COLLATE=utf8mb3_general_ci;
CREATE TABLE `default_volume_types` (
  `created_at` datetime DEFAULT NULL,
  `updated_at` datetime DEFAULT NULL,
  `deleted_at` datetime DEFAULT NULL,
  `volume_type_id` varchar(36) DEFAULT NULL,
  `project_id` varchar(255) NOT NULL,
  `deleted` tinyint(1) DEFAULT NULL,
  PRIMARY KEY (`project_id`),
  KEY `ix_default_volume_types_volume_type_id` (`volume_type_id`),
  CONSTRAINT `default_volume_types_ibfk_1` FOREIGN KEY (`volume_type_id`) REFERENCES `volume_types` (`id`),
  CONSTRAINT `CONSTRAINT_1` CHECK (`deleted` in (0,1))
) ENGINE=InnoDB DEFAULT CHARSET=utf8mb3 COLLATE=utf8mb3_general_ci;
CREATE TABLE `driver_initiator_data` (
  `created_at` datetime DEFAULT NULL,
  `updated_at` datetime DEFAULT NULL,
  `id` int(11) NOT NULL AUTO_INCREMENT,
  `initiator` varchar(255) NOT NULL,
  `namespace` varchar(255) NOT NULL,
  `key` varchar(255) NOT NULL,
  `value` varchar(255) DEFAULT NULL,
  PRIMARY KEY (`id`),
  UNIQUE KEY `initiator` (`initiator`,`namespace`,`key`),
  KEY `ix_driver_initiator_data_initiator` (`initiator`)
) ENGINE=InnoDB DEFAULT CHARSET=utf8mb3 COLLATE=utf8mb3_general_ci;
CREATE TABLE `encryption` (
  `created_at` datetime DEFAULT NULL,
  `updated_at` datetime DEFAULT NULL,
  `deleted_at` datetime DEFAULT NULL,
  `deleted` tinyint(1) DEFAULT NULL,
  `cipher` varchar(255) DEFAULT NULL,
  `control_location` varchar(255) NOT NULL,
  `key_size` int(11) DEFAULT NULL,
  `provider` varchar(255) NOT NULL,
  `volume_type_id` varchar(36) NOT NULL,
  `encryption_id` varchar(36) NOT NULL,
  PRIMARY KEY (`encryption_id`),
  CONSTRAINT `CONSTRAINT_1` CHECK (`deleted` in (0,1))
) ENGINE=InnoDB DEFAULT CHARSET=utf8mb3 COLLATE=utf8mb3_general_ci;
CREATE TABLE `group_snapshots` (
  `created_at` datetime DEFAULT NULL,
  `updated_at` datetime DEFAULT NULL,
  `deleted_at` datetime DEFAULT NULL,
  `deleted` tinyint(1) DEFAULT NULL,
  `id` varchar(36) NOT NULL,
  `group_id` varchar(36) NOT NULL,
  `user_id` varchar(255) DEFAULT NULL,
  `project_id` varchar(255) DEFAULT NULL,
  `name` varchar(255) DEFAULT NULL,
  `description` varchar(255) DEFAULT NULL,
  `status` varchar(255) DEFAULT NULL,
  `group_type_id` varchar(36) DEFAULT NULL,
  PRIMARY KEY (`id`),
  KEY `ix_group_snapshots_group_id` (`group_id`),
  KEY `group_snapshots_deleted_project_id_idx` (`deleted`,`project_id`),
  CONSTRAINT `group_snapshots_ibfk_1` FOREIGN KEY (`group_id`) REFERENCES `groups` (`id`),
  CONSTRAINT `CONSTRAINT_1` CHECK (`deleted` in (0,1))
) ENGINE=InnoDB DEFAULT CHARSET=utf8mb3 COLLATE=utf8mb3_general_ci;
CREATE TABLE `group_type_projects` (
  `id` int(11) NOT NULL AUTO_INCREMENT,
  `created_at` datetime DEFAULT NULL,
  `updated_at` datetime DEFAULT NULL,
  `deleted_at` datetime DEFAULT NULL,
  `group_type_id` varchar(36) DEFAULT NULL,
  `project_id` varchar(255) DEFAULT NULL,
  `deleted` tinyint(1) DEFAULT NULL,
  PRIMARY KEY (`id`),
  UNIQUE KEY `group_type_id` (`group_type_id`,`project_id`,`deleted`),
  CONSTRAINT `group_type_projects_ibfk_1` FOREIGN KEY (`group_type_id`) REFERENCES `group_types` (`id`),
  CONSTRAINT `CONSTRAINT_1` CHECK (`deleted` in (0,1))
) ENGINE=InnoDB DEFAULT CHARSET=utf8mb3 COLLATE=utf8mb3_general_ci;
CREATE TABLE `group_type_specs` (
  `id` int(11) NOT NULL AUTO_INCREMENT,
  `key` varchar(255) DEFAULT NULL,
  `value` varchar(255) DEFAULT NULL,
  `group_type_id` varchar(36) NOT NULL,
  `created_at` datetime DEFAULT NULL,
  `updated_at` datetime DEFAULT NULL,
  `deleted_at` datetime DEFAULT NULL,
  `deleted` tinyint(1) DEFAULT NULL,
  PRIMARY KEY (`id`),
  KEY `ix_group_type_specs_group_type_id` (`group_type_id`),
  CONSTRAINT `group_type_specs_ibfk_1` FOREIGN KEY (`group_type_id`) REFERENCES `group_types` (`id`)
) ENGINE=InnoDB AUTO_INCREMENT=2 DEFAULT CHARSET=utf8mb3 COLLATE=utf8mb3_general_ci;
INSERT INTO `group_type_specs` VALUES (1,'consistent_group_snapshot_enabled','<is> True','97129385-df7c-441e-be5d-1611979a2464','2026-11-28 02:09:23','2026-11-28 02:09:23',NULL,0);
CREATE TABLE `group_types` (
  `id` varchar(36) NOT NULL,
  `name` varchar(255) NOT NULL,
  `description` varchar(255) DEFAULT NULL,
  `created_at` datetime DEFAULT NULL,
  `updated_at` datetime DEFAULT NULL,
  `deleted_at` datetime DEFAULT NULL,
  `deleted` tinyint(1) DEFAULT NULL,
  `is_public` tinyint(1) DEFAULT NULL,
  PRIMARY KEY (`id`)
) ENGINE=InnoDB DEFAULT CHARSET=utf8mb3 COLLATE=utf8mb3_general_ci;
INSERT INTO `group_types` VALUES ('97129385-df7c-441e-be5d-1611979a2464','default_cgsnapshot_type','Default group type for migrating cgsnapshot','2026-11-28 02:09:23','2026-11-28 02:09:23',NULL,0,1);
CREATE TABLE `group_volume_type_mapping` (
  `created_at` datetime DEFAULT NULL,
  `updated_at` datetime DEFAULT NULL,
  `deleted_at` datetime DEFAULT NULL,
  `deleted` tinyint(1) DEFAULT NULL,
  `id` int(11) NOT NULL AUTO_INCREMENT,
  `volume_type_id` varchar(36) NOT NULL,
  `group_id` varchar(36) NOT NULL,
  PRIMARY KEY (`id`),
  KEY `ix_group_volume_type_mapping_volume_type_id` (`volume_type_id`),
  KEY `ix_group_volume_type_mapping_group_id` (`group_id`),
  CONSTRAINT `group_volume_type_mapping_ibfk_1` FOREIGN KEY (`volume_type_id`) REFERENCES `volume_types` (`id`),
  CONSTRAINT `group_volume_type_mapping_ibfk_2` FOREIGN KEY (`group_id`) REFERENCES `groups` (`id`)
) ENGINE=InnoDB DEFAULT CHARSET=utf8mb3 COLLATE=utf8mb3_general_ci;
CREATE TABLE `groups` (
  `created_at` datetime DEFAULT NULL,
  `updated_at` datetime DEFAULT NULL,
  `deleted_at` datetime DEFAULT NULL,
  `deleted` tinyint(1) DEFAULT NULL,
  `id` varchar(36) NOT NULL,
  `user_id` varchar(255) DEFAULT NULL,
  `project_id` varchar(255) DEFAULT NULL,
  `cluster_name` varchar(255) DEFAULT NULL,
  `host` varchar(255) DEFAULT NULL,
  `availability_zone` varchar(255) DEFAULT NULL,
  `name` varchar(255) DEFAULT NULL,
  `description` varchar(255) DEFAULT NULL,
  `group_type_id` varchar(36) DEFAULT NULL,
  `status` varchar(255) DEFAULT NULL,
  `group_snapshot_id` varchar(36) DEFAULT NULL,
  `source_group_id` varchar(36) DEFAULT NULL,
  `replication_status` varchar(255) DEFAULT NULL,
  PRIMARY KEY (`id`),
  KEY `groups_deleted_project_id_idx` (`deleted`,`project_id`)
) ENGINE=InnoDB DEFAULT CHARSET=utf8mb3 COLLATE=utf8mb3_general_ci;
CREATE TABLE `image_volume_cache_entries` (
  `image_updated_at` datetime DEFAULT NULL,
  `id` int(11) NOT NULL AUTO_INCREMENT,
  `host` varchar(255) NOT NULL,
  `image_id` varchar(36) NOT NULL,
  `volume_id` varchar(36) NOT NULL,
  `size` int(11) NOT NULL,
  `last_used` datetime NOT NULL,
  `cluster_name` varchar(255) DEFAULT NULL,
  PRIMARY KEY (`id`),
  KEY `ix_image_volume_cache_entries_host` (`host`),
  KEY `ix_image_volume_cache_entries_image_id` (`image_id`)
) ENGINE=InnoDB DEFAULT CHARSET=utf8mb3 COLLATE=utf8mb3_general_ci;
CREATE TABLE `messages` (
  `id` varchar(36) NOT NULL,
  `project_id` varchar(255) NOT NULL,
  `request_id` varchar(255) DEFAULT NULL,
  `resource_type` varchar(36) DEFAULT NULL,
  `resource_uuid` varchar(255) DEFAULT NULL,
  `event_id` varchar(255) NOT NULL,
  `message_level` varchar(255) NOT NULL,
  `created_at` datetime DEFAULT NULL,
  `updated_at` datetime DEFAULT NULL,
  `deleted_at` datetime DEFAULT NULL,
  `deleted` tinyint(1) DEFAULT NULL,
  `expires_at` datetime DEFAULT NULL,
  `detail_id` varchar(10) DEFAULT NULL,
  `action_id` varchar(10) DEFAULT NULL,
  PRIMARY KEY (`id`),
  KEY `ix_messages_expires_at` (`expires_at`)
) ENGINE=InnoDB DEFAULT CHARSET=utf8mb3 COLLATE=utf8mb3_general_ci;
CREATE TABLE `quality_of_service_specs` (
  `created_at` datetime DEFAULT NULL,
  `updated_at` datetime DEFAULT NULL,
  `deleted_at` datetime DEFAULT NULL,
  `deleted` tinyint(1) DEFAULT NULL,
  `id` varchar(36) NOT NULL,
  `specs_id` varchar(36) DEFAULT NULL,
  `key` varchar(255) DEFAULT NULL,
  `value` varchar(255) DEFAULT NULL,
  PRIMARY KEY (`id`),
  KEY `ix_quality_of_service_specs_specs_id` (`specs_id`),
  CONSTRAINT `quality_of_service_specs_ibfk_1` FOREIGN KEY (`specs_id`) REFERENCES `quality_of_service_specs` (`id`),
  CONSTRAINT `CONSTRAINT_1` CHECK (`deleted` in (0,1))
) ENGINE=InnoDB DEFAULT CHARSET=utf8mb3 COLLATE=utf8mb3_general_ci;
INSERT INTO `quality_of_service_specs` VALUES ('2026-11-28 02:09:29',NULL,NULL,0,'516c71c5-1bee-4f9c-828e-b5d2a9769326',NULL,'QoS_Specs_Name','gold-qos');
INSERT INTO `quality_of_service_specs` VALUES ('2026-11-28 02:09:29',NULL,NULL,0,'b4fe2177-5e2a-4e80-b40e-4283944b7a96','516c71c5-1bee-4f9c-828e-b5d2a9769326','read_bytes_sec','1048576');
INSERT INTO `quality_of_service_specs` VALUES ('2026-11-28 02:09:29',NULL,NULL,0,'dc61cb9d-6f5e-4aee-87ce-2ab9052ddca5','516c71c5-1bee-4f9c-828e-b5d2a9769326','consumer','back-end');
INSERT INTO `quality_of_service_specs` VALUES ('2026-11-28 02:09:29',NULL,NULL,0,'ee5704f8-9ecb-4e32-8dbe-cf8142727c93','516c71c5-1bee-4f9c-828e-b5d2a9769326','total_iops_sec','500');
CREATE TABLE `quota_classes` (
  `created_at` datetime DEFAULT NULL,
  `updated_at` datetime DEFAULT NULL,
  `deleted_at` datetime DEFAULT NULL,
  `deleted` tinyint(1) DEFAULT NULL,
  `id` int(11) NOT NULL AUTO_INCREMENT,
  `class_name` varchar(255) DEFAULT NULL,
  `resource` varchar(300) DEFAULT NULL,
  `hard_limit` int(11) DEFAULT NULL,
  PRIMARY KEY (`id`),
  KEY `ix_quota_classes_class_name` (`class_name`),
  CONSTRAINT `CONSTRAINT_1` CHECK (`deleted` in (0,1))
) ENGINE=InnoDB AUTO_INCREMENT=8 DEFAULT CHARSET=utf8mb3 COLLATE=utf8mb3_general_ci;
INSERT INTO `quota_classes` VALUES ('2026-11-28 02:09:19',NULL,NULL,0,1,'default','volumes',-1);
INSERT INTO `quota_classes` VALUES ('2026-11-28 02:09:19',NULL,NULL,0,2,'default','snapshots',-1);
INSERT INTO `quota_classes` VALUES ('2026-11-28 02:09:19',NULL,NULL,0,3,'default','gigabytes',-1);
INSERT INTO `quota_classes` VALUES ('2026-11-28 02:09:19',NULL,NULL,0,4,'default','per_volume_gigabytes',-1);
INSERT INTO `quota_classes` VALUES ('2026-11-28 02:09:19',NULL,NULL,0,5,'default','groups',-1);
INSERT INTO `quota_classes` VALUES ('2026-11-28 02:09:24','2026-11-28 02:09:30',NULL,0,6,'default','backups',7);
INSERT INTO `quota_classes` VALUES ('2026-11-28 02:09:24',NULL,NULL,0,7,'default','backup_gigabytes',-1);
CREATE TABLE `quota_usages` (
  `created_at` datetime DEFAULT NULL,
  `updated_at` datetime DEFAULT NULL,
  `deleted_at` datetime DEFAULT NULL,
  `deleted` tinyint(1) DEFAULT NULL,
  `id` int(11) NOT NULL AUTO_INCREMENT,
  `project_id` varchar(255) DEFAULT NULL,
  `resource` varchar(300) DEFAULT NULL,
  `in_use` int(11) NOT NULL,
  `reserved` int(11) NOT NULL,
  `until_refresh` int(11) DEFAULT NULL,
  `race_preventer` tinyint(1) DEFAULT NULL,
  PRIMARY KEY (`id`),
  UNIQUE KEY `project_id` (`project_id`,`resource`,`race_preventer`),
  KEY `quota_usage_project_resource_idx` (`project_id`,`resource`),
  KEY `ix_quota_usages_project_id` (`project_id`),
  CONSTRAINT `CONSTRAINT_1` CHECK (`deleted` in (0,1))
) ENGINE=InnoDB AUTO_INCREMENT=15 DEFAULT CHARSET=utf8mb3 COLLATE=utf8mb3_general_ci;
INSERT INTO `quota_usages` VALUES ('2026-11-28 02:09:30','2026-11-28 02:09:37',NULL,0,1,'3a5c1e6f8b2d4c0e9f7a1b2c3d4e5f60','volumes',7,0,NULL,1);
INSERT INTO `quota_usages` VALUES ('2026-11-28 02:09:30','2026-11-28 02:09:37',NULL,0,2,'3a5c1e6f8b2d4c0e9f7a1b2c3d4e5f60','gigabytes',15,0,NULL,1);
INSERT INTO `quota_usages` VALUES ('2026-11-28 02:09:30','2026-11-28 02:09:37',NULL,0,3,'3a5c1e6f8b2d4c0e9f7a1b2c3d4e5f60','volumes___DEFAULT__',4,0,NULL,1);
INSERT INTO `quota_usages` VALUES ('2026-11-28 02:09:30','2026-11-28 02:09:37',NULL,0,4,'3a5c1e6f8b2d4c0e9f7a1b2c3d4e5f60','gigabytes___DEFAULT__',4,0,NULL,1);
INSERT INTO `quota_usages` VALUES ('2026-11-28 02:09:31','2026-11-28 02:09:31',NULL,0,5,'3a5c1e6f8b2d4c0e9f7a1b2c3d4e5f60','volumes_multiattach',1,0,NULL,1);
INSERT INTO `quota_usages` VALUES ('2026-11-28 02:09:31','2026-11-28 02:09:31',NULL,0,6,'3a5c1e6f8b2d4c0e9f7a1b2c3d4e5f60','gigabytes_multiattach',2,0,NULL,1);
INSERT INTO `quota_usages` VALUES ('2026-11-28 02:09:32','2026-11-28 02:09:33',NULL,0,7,'3a5c1e6f8b2d4c0e9f7a1b2c3d4e5f60','volumes_gold',2,0,NULL,1);
INSERT INTO `quota_usages` VALUES ('2026-11-28 02:09:32','2026-11-28 02:09:33',NULL,0,8,'3a5c1e6f8b2d4c0e9f7a1b2c3d4e5f60','gigabytes_gold',9,0,NULL,1);
INSERT INTO `quota_usages` VALUES ('2026-11-28 02:09:32','2026-11-28 02:09:32',NULL,0,9,'3a5c1e6f8b2d4c0e9f7a1b2c3d4e5f60','snapshots',1,0,NULL,1);
INSERT INTO `quota_usages` VALUES ('2026-11-28 02:09:32','2026-11-28 02:09:32',NULL,0,10,'3a5c1e6f8b2d4c0e9f7a1b2c3d4e5f60','snapshots_gold',1,0,NULL,1);
INSERT INTO `quota_usages` VALUES ('2026-11-28 02:09:37','2026-11-28 02:09:37',NULL,0,11,'0b1c2d3e4f5061728394a5b6c7d8e9f0','volumes',1,0,NULL,1);
INSERT INTO `quota_usages` VALUES ('2026-11-28 02:09:37','2026-11-28 02:09:37',NULL,0,12,'0b1c2d3e4f5061728394a5b6c7d8e9f0','gigabytes',1,0,NULL,1);
INSERT INTO `quota_usages` VALUES ('2026-11-28 02:09:37','2026-11-28 02:09:37',NULL,0,13,'0b1c2d3e4f5061728394a5b6c7d8e9f0','volumes_private',1,0,NULL,1);
INSERT INTO `quota_usages` VALUES ('2026-11-28 02:09:37','2026-11-28 02:09:37',NULL,0,14,'0b1c2d3e4f5061728394a5b6c7d8e9f0','gigabytes_private',1,0,NULL,1);
CREATE TABLE `quotas` (
  `id` int(11) NOT NULL AUTO_INCREMENT,
  `created_at` datetime DEFAULT NULL,
  `updated_at` datetime DEFAULT NULL,
  `deleted_at` datetime DEFAULT NULL,
  `deleted` tinyint(1) DEFAULT NULL,
  `project_id` varchar(255) DEFAULT NULL,
  `resource` varchar(300) NOT NULL,
  `hard_limit` int(11) DEFAULT NULL,
  `allocated` int(11) DEFAULT NULL,
  PRIMARY KEY (`id`)
) ENGINE=InnoDB AUTO_INCREMENT=5 DEFAULT CHARSET=utf8mb3 COLLATE=utf8mb3_general_ci;
INSERT INTO `quotas` VALUES (1,'2026-11-28 02:09:29',NULL,NULL,0,'3a5c1e6f8b2d4c0e9f7a1b2c3d4e5f60','volumes',20,NULL);
INSERT INTO `quotas` VALUES (2,'2026-11-28 02:09:29',NULL,NULL,0,'3a5c1e6f8b2d4c0e9f7a1b2c3d4e5f60','gigabytes',500,NULL);
INSERT INTO `quotas` VALUES (3,'2026-11-28 02:09:29',NULL,NULL,0,'3a5c1e6f8b2d4c0e9f7a1b2c3d4e5f60','snapshots',15,NULL);
INSERT INTO `quotas` VALUES (4,'2026-11-28 02:09:29',NULL,NULL,0,'3a5c1e6f8b2d4c0e9f7a1b2c3d4e5f60','volumes_gold',5,NULL);
CREATE TABLE `reservations` (
  `created_at` datetime DEFAULT NULL,
  `updated_at` datetime DEFAULT NULL,
  `deleted_at` datetime DEFAULT NULL,
  `deleted` tinyint(1) DEFAULT NULL,
  `id` int(11) NOT NULL AUTO_INCREMENT,
  `uuid` varchar(36) NOT NULL,
  `usage_id` int(11) DEFAULT NULL,
  `project_id` varchar(255) DEFAULT NULL,
  `resource` varchar(300) DEFAULT NULL,
  `delta` int(11) NOT NULL,
  `expire` datetime DEFAULT NULL,
  `allocated_id` int(11) DEFAULT NULL,
  PRIMARY KEY (`id`),
  KEY `ix_reservations_project_id` (`project_id`),
  KEY `ix_reservations_allocated_id` (`allocated_id`),
  KEY `ix_reservations_usage_id` (`usage_id`),
  KEY `reservations_deleted_expire_idx` (`deleted`,`expire`),
  KEY `reservations_deleted_uuid_idx` (`deleted`,`uuid`),
  CONSTRAINT `reservations_ibfk_1` FOREIGN KEY (`usage_id`) REFERENCES `quota_usages` (`id`),
  CONSTRAINT `reservations_ibfk_2` FOREIGN KEY (`allocated_id`) REFERENCES `quotas` (`id`),
  CONSTRAINT `CONSTRAINT_1` CHECK (`deleted` in (0,1))
) ENGINE=InnoDB AUTO_INCREMENT=45 DEFAULT CHARSET=utf8mb3 COLLATE=utf8mb3_general_ci;
INSERT INTO `reservations` VALUES ('2026-11-28 02:09:30','2026-11-28 02:09:30','2026-11-28 02:09:30',1,1,'80d22bfe-b8a9-454d-98be-7bc3d039d975',1,'3a5c1e6f8b2d4c0e9f7a1b2c3d4e5f60','volumes',1,'2026-11-29 02:09:30',NULL);
INSERT INTO `reservations` VALUES ('2026-11-28 02:09:30','2026-11-28 02:09:30','2026-11-28 02:09:30',1,2,'57f6ee21-6d01-4d45-b9a7-181af55247c7',2,'3a5c1e6f8b2d4c0e9f7a1b2c3d4e5f60','gigabytes',1,'2026-11-29 02:09:30',NULL);
INSERT INTO `reservations` VALUES ('2026-11-28 02:09:30','2026-11-28 02:09:30','2026-11-28 02:09:30',1,3,'2085f465-b68e-41b2-9cbe-ac0319bf6bda',3,'3a5c1e6f8b2d4c0e9f7a1b2c3d4e5f60','volumes___DEFAULT__',1,'2026-11-29 02:09:30',NULL);
INSERT INTO `reservations` VALUES ('2026-11-28 02:09:30','2026-11-28 02:09:30','2026-11-28 02:09:30',1,4,'31ab2967-0152-4616-8f09-15b10bdbd0ef',4,'3a5c1e6f8b2d4c0e9f7a1b2c3d4e5f60','gigabytes___DEFAULT__',1,'2026-11-29 02:09:30',NULL);
INSERT INTO `reservations` VALUES ('2026-11-28 02:09:31','2026-11-28 02:09:31','2026-11-28 02:09:31',1,5,'321fca43-8aa8-4357-911c-094ae2473969',1,'3a5c1e6f8b2d4c0e9f7a1b2c3d4e5f60','volumes',1,'2026-11-29 02:09:31',NULL);
INSERT INTO `reservations` VALUES ('2026-11-28 02:09:31','2026-11-28 02:09:31','2026-11-28 02:09:31',1,6,'faf72943-7e4e-4585-aad0-fc0d1794e5b2',2,'3a5c1e6f8b2d4c0e9f7a1b2c3d4e5f60','gigabytes',2,'2026-11-29 02:09:31',NULL);
INSERT INTO `reservations` VALUES ('2026-11-28 02:09:31','2026-11-28 02:09:31','2026-11-28 02:09:31',1,7,'8dc1ff4d-850f-46fb-b873-0d692863085b',5,'3a5c1e6f8b2d4c0e9f7a1b2c3d4e5f60','volumes_multiattach',1,'2026-11-29 02:09:31',NULL);
INSERT INTO `reservations` VALUES ('2026-11-28 02:09:31','2026-11-28 02:09:31','2026-11-28 02:09:31',1,8,'84ae1f0f-e2cf-4547-9d2d-9e694e484b1f',6,'3a5c1e6f8b2d4c0e9f7a1b2c3d4e5f60','gigabytes_multiattach',2,'2026-11-29 02:09:31',NULL);
INSERT INTO `reservations` VALUES ('2026-11-28 02:09:32','2026-11-28 02:09:32','2026-11-28 02:09:32',1,9,'94e38e89-3a33-45b8-9ede-56006480ef54',1,'3a5c1e6f8b2d4c0e9f7a1b2c3d4e5f60','volumes',1,'2026-11-29 02:09:32',NULL);
INSERT INTO `reservations` VALUES ('2026-11-28 02:09:32','2026-11-28 02:09:32','2026-11-28 02:09:32',1,10,'cffe1cd3-aa69-46aa-9874-aa4b526d0c3f',2,'3a5c1e6f8b2d4c0e9f7a1b2c3d4e5f60','gigabytes',3,'2026-11-29 02:09:32',NULL);
INSERT INTO `reservations` VALUES ('2026-11-28 02:09:32','2026-11-28 02:09:32','2026-11-28 02:09:32',1,11,'582f2a09-78ee-467e-89b5-65d07df8e329',7,'3a5c1e6f8b2d4c0e9f7a1b2c3d4e5f60','volumes_gold',1,'2026-11-29 02:09:32',NULL);
INSERT INTO `reservations` VALUES ('2026-11-28 02:09:32','2026-11-28 02:09:32','2026-11-28 02:09:32',1,12,'f9c2c57b-a189-40c9-9f67-310a6ed40693',8,'3a5c1e6f8b2d4c0e9f7a1b2c3d4e5f60','gigabytes_gold',3,'2026-11-29 02:09:32',NULL);
INSERT INTO `reservations` VALUES ('2026-11-28 02:09:32','2026-11-28 02:09:32','2026-11-28 02:09:32',1,13,'45b0d18c-e21d-4ce6-be68-f144ac269f4d',9,'3a5c1e6f8b2d4c0e9f7a1b2c3d4e5f60','snapshots',1,'2026-11-29 02:09:32',NULL);
INSERT INTO `reservations` VALUES ('2026-11-28 02:09:32','2026-11-28 02:09:32','2026-11-28 02:09:32',1,14,'82f81656-72b0-463d-b1ae-13cb7b6b9eb7',2,'3a5c1e6f8b2d4c0e9f7a1b2c3d4e5f60','gigabytes',3,'2026-11-29 02:09:32',NULL);
INSERT INTO `reservations` VALUES ('2026-11-28 02:09:32','2026-11-28 02:09:32','2026-11-28 02:09:32',1,15,'db744143-89e1-4b3f-8310-b04fcf4dda9b',8,'3a5c1e6f8b2d4c0e9f7a1b2c3d4e5f60','gigabytes_gold',3,'2026-11-29 02:09:32',NULL);
INSERT INTO `reservations` VALUES ('2026-11-28 02:09:32','2026-11-28 02:09:32','2026-11-28 02:09:32',1,16,'5f8d890f-f928-41f8-84b2-52629484657d',10,'3a5c1e6f8b2d4c0e9f7a1b2c3d4e5f60','snapshots_gold',1,'2026-11-29 02:09:32',NULL);
INSERT INTO `reservations` VALUES ('2026-11-28 02:09:33','2026-11-28 02:09:33','2026-11-28 02:09:33',1,17,'31607d8f-19e8-4c63-84a6-255fba551f26',1,'3a5c1e6f8b2d4c0e9f7a1b2c3d4e5f60','volumes',1,'2026-11-29 02:09:33',NULL);
INSERT INTO `reservations` VALUES ('2026-11-28 02:09:33','2026-11-28 02:09:33','2026-11-28 02:09:33',1,18,'48c78365-36a1-4f23-9001-38c74a2cd2a6',2,'3a5c1e6f8b2d4c0e9f7a1b2c3d4e5f60','gigabytes',3,'2026-11-29 02:09:33',NULL);
INSERT INTO `reservations` VALUES ('2026-11-28 02:09:33','2026-11-28 02:09:33','2026-11-28 02:09:33',1,19,'8b184a8f-2d2c-4a39-937d-af1dcaeba877',7,'3a5c1e6f8b2d4c0e9f7a1b2c3d4e5f60','volumes_gold',1,'2026-11-29 02:09:33',NULL);
INSERT INTO `reservations` VALUES ('2026-11-28 02:09:33','2026-11-28 02:09:33','2026-11-28 02:09:33',1,20,'339b0d95-af2d-4679-a03b-9ff932847cf1',8,'3a5c1e6f8b2d4c0e9f7a1b2c3d4e5f60','gigabytes_gold',3,'2026-11-29 02:09:33',NULL);
INSERT INTO `reservations` VALUES ('2026-11-28 02:09:34','2026-11-28 02:09:34','2026-11-28 02:09:34',1,21,'46d8b2bd-611b-497b-85bc-3452eb172003',1,'3a5c1e6f8b2d4c0e9f7a1b2c3d4e5f60','volumes',1,'2026-11-29 02:09:34',NULL);
INSERT INTO `reservations` VALUES ('2026-11-28 02:09:34','2026-11-28 02:09:34','2026-11-28 02:09:34',1,22,'88f54103-1807-470a-a1cb-1d31b774b041',2,'3a5c1e6f8b2d4c0e9f7a1b2c3d4e5f60','gigabytes',1,'2026-11-29 02:09:34',NULL);
INSERT INTO `reservations` VALUES ('2026-11-28 02:09:34','2026-11-28 02:09:34','2026-11-28 02:09:34',1,23,'10fd6630-ef4d-4e43-a858-2da7cf52c851',3,'3a5c1e6f8b2d4c0e9f7a1b2c3d4e5f60','volumes___DEFAULT__',1,'2026-11-29 02:09:34',NULL);
INSERT INTO `reservations` VALUES ('2026-11-28 02:09:34','2026-11-28 02:09:34','2026-11-28 02:09:34',1,24,'7a8a77fb-49d2-4d79-892e-b5811545e349',4,'3a5c1e6f8b2d4c0e9f7a1b2c3d4e5f60','gigabytes___DEFAULT__',1,'2026-11-29 02:09:34',NULL);
INSERT INTO `reservations` VALUES ('2026-11-28 02:09:35','2026-11-28 02:09:35','2026-11-28 02:09:35',1,25,'12b2e4d5-84d9-42a5-b58f-2f3e69445609',1,'3a5c1e6f8b2d4c0e9f7a1b2c3d4e5f60','volumes',1,'2026-11-29 02:09:35',NULL);
INSERT INTO `reservations` VALUES ('2026-11-28 02:09:35','2026-11-28 02:09:35','2026-11-28 02:09:35',1,26,'977aacf5-4117-443a-8bfa-4063223f130d',2,'3a5c1e6f8b2d4c0e9f7a1b2c3d4e5f60','gigabytes',1,'2026-11-29 02:09:35',NULL);
INSERT INTO `reservations` VALUES ('2026-11-28 02:09:35','2026-11-28 02:09:35','2026-11-28 02:09:35',1,27,'0f297e0a-91ce-4a2a-8761-3416835d35fa',3,'3a5c1e6f8b2d4c0e9f7a1b2c3d4e5f60','volumes___DEFAULT__',1,'2026-11-29 02:09:35',NULL);
INSERT INTO `reservations` VALUES ('2026-11-28 02:09:35','2026-11-28 02:09:35','2026-11-28 02:09:35',1,28,'a1bb280c-a2c9-4961-bb52-0c6444e9bfe2',4,'3a5c1e6f8b2d4c0e9f7a1b2c3d4e5f60','gigabytes___DEFAULT__',1,'2026-11-29 02:09:35',NULL);
INSERT INTO `reservations` VALUES ('2026-11-28 02:09:35','2026-11-28 02:09:35','2026-11-28 02:09:35',1,29,'2e17cfcc-47af-4122-9271-68ee8a82dd81',1,'3a5c1e6f8b2d4c0e9f7a1b2c3d4e5f60','volumes',1,'2026-11-29 02:09:35',NULL);
INSERT INTO `reservations` VALUES ('2026-11-28 02:09:35','2026-11-28 02:09:35','2026-11-28 02:09:35',1,30,'7d8cf686-5e4e-4741-941e-9c013af4ae09',2,'3a5c1e6f8b2d4c0e9f7a1b2c3d4e5f60','gigabytes',1,'2026-11-29 02:09:35',NULL);
INSERT INTO `reservations` VALUES ('2026-11-28 02:09:35','2026-11-28 02:09:35','2026-11-28 02:09:35',1,31,'469273c9-3949-488f-ab84-950e3f6e29e9',3,'3a5c1e6f8b2d4c0e9f7a1b2c3d4e5f60','volumes___DEFAULT__',1,'2026-11-29 02:09:35',NULL);
INSERT INTO `reservations` VALUES ('2026-11-28 02:09:35','2026-11-28 02:09:35','2026-11-28 02:09:35',1,32,'92d67468-1c62-4f1b-a187-e70228d2416d',4,'3a5c1e6f8b2d4c0e9f7a1b2c3d4e5f60','gigabytes___DEFAULT__',1,'2026-11-29 02:09:35',NULL);
INSERT INTO `reservations` VALUES ('2026-11-28 02:09:36','2026-11-28 02:09:36','2026-11-28 02:09:36',1,33,'b05b4625-01b7-4f4c-8037-f52a197b700c',1,'3a5c1e6f8b2d4c0e9f7a1b2c3d4e5f60','volumes',1,'2026-11-29 02:09:36',NULL);
INSERT INTO `reservations` VALUES ('2026-11-28 02:09:36','2026-11-28 02:09:36','2026-11-28 02:09:36',1,34,'ab0cbb99-8850-448d-b675-e5ab75dad05a',2,'3a5c1e6f8b2d4c0e9f7a1b2c3d4e5f60','gigabytes',1,'2026-11-29 02:09:36',NULL);
INSERT INTO `reservations` VALUES ('2026-11-28 02:09:36','2026-11-28 02:09:36','2026-11-28 02:09:36',1,35,'bbca1842-a9fa-487d-93b1-ecfa861e5c78',3,'3a5c1e6f8b2d4c0e9f7a1b2c3d4e5f60','volumes___DEFAULT__',1,'2026-11-29 02:09:36',NULL);
INSERT INTO `reservations` VALUES ('2026-11-28 02:09:36','2026-11-28 02:09:36','2026-11-28 02:09:36',1,36,'819d075c-088a-4101-b280-101ce79d71d5',4,'3a5c1e6f8b2d4c0e9f7a1b2c3d4e5f60','gigabytes___DEFAULT__',1,'2026-11-29 02:09:36',NULL);
INSERT INTO `reservations` VALUES ('2026-11-28 02:09:37','2026-11-28 02:09:37','2026-11-28 02:09:37',1,37,'f302d839-cb5e-4925-8f26-0427e492a566',1,'3a5c1e6f8b2d4c0e9f7a1b2c3d4e5f60','volumes',-1,'2026-11-29 02:09:37',NULL);
INSERT INTO `reservations` VALUES ('2026-11-28 02:09:37','2026-11-28 02:09:37','2026-11-28 02:09:37',1,38,'a361cbd5-2ba1-4c18-b84a-5042b2fdf9c7',2,'3a5c1e6f8b2d4c0e9f7a1b2c3d4e5f60','gigabytes',-1,'2026-11-29 02:09:37',NULL);
INSERT INTO `reservations` VALUES ('2026-11-28 02:09:37','2026-11-28 02:09:37','2026-11-28 02:09:37',1,39,'2b4e90b4-1784-4bf7-8f5f-d4c14ef9a5e1',3,'3a5c1e6f8b2d4c0e9f7a1b2c3d4e5f60','volumes___DEFAULT__',-1,'2026-11-29 02:09:37',NULL);
INSERT INTO `reservations` VALUES ('2026-11-28 02:09:37','2026-11-28 02:09:37','2026-11-28 02:09:37',1,40,'5f97b337-cd54-4190-9116-0bea79bb9571',4,'3a5c1e6f8b2d4c0e9f7a1b2c3d4e5f60','gigabytes___DEFAULT__',-1,'2026-11-29 02:09:37',NULL);
INSERT INTO `reservations` VALUES ('2026-11-28 02:09:37','2026-11-28 02:09:37','2026-11-28 02:09:37',1,41,'20a180f8-589e-4b5c-9503-386af0b7d362',11,'0b1c2d3e4f5061728394a5b6c7d8e9f0','volumes',1,'2026-11-29 02:09:37',NULL);
INSERT INTO `reservations` VALUES ('2026-11-28 02:09:37','2026-11-28 02:09:37','2026-11-28 02:09:37',1,42,'d73966d4-87f8-48ce-a71a-e91f0e318946',12,'0b1c2d3e4f5061728394a5b6c7d8e9f0','gigabytes',1,'2026-11-29 02:09:37',NULL);
INSERT INTO `reservations` VALUES ('2026-11-28 02:09:37','2026-11-28 02:09:37','2026-11-28 02:09:37',1,43,'56a06c22-c078-402f-9813-6a04083594d0',13,'0b1c2d3e4f5061728394a5b6c7d8e9f0','volumes_private',1,'2026-11-29 02:09:37',NULL);
INSERT INTO `reservations` VALUES ('2026-11-28 02:09:37','2026-11-28 02:09:37','2026-11-28 02:09:37',1,44,'dd7559a8-a6df-48e3-a618-a37753f2cdb7',14,'0b1c2d3e4f5061728394a5b6c7d8e9f0','gigabytes_private',1,'2026-11-29 02:09:37',NULL);
CREATE TABLE `services` (
  `created_at` datetime DEFAULT NULL,
  `updated_at` datetime DEFAULT NULL,
  `deleted_at` datetime DEFAULT NULL,
  `deleted` tinyint(1) DEFAULT NULL,
  `id` int(11) NOT NULL AUTO_INCREMENT,
  `host` varchar(255) DEFAULT NULL,
  `binary` varchar(255) DEFAULT NULL,
  `topic` varchar(255) DEFAULT NULL,
  `report_count` int(11) NOT NULL,
  `disabled` tinyint(1) DEFAULT NULL,
  `availability_zone` varchar(255) DEFAULT NULL,
  `disabled_reason` varchar(255) DEFAULT NULL,
  `modified_at` datetime DEFAULT NULL,
  `rpc_current_version` varchar(36) DEFAULT NULL,
  `object_current_version` varchar(36) DEFAULT NULL,
  `replication_status` varchar(36) DEFAULT NULL,
  `frozen` tinyint(1) DEFAULT NULL,
  `active_backend_id` varchar(255) DEFAULT NULL,
  `cluster_name` varchar(255) DEFAULT NULL,
  `uuid` varchar(36) DEFAULT NULL,
  PRIMARY KEY (`id`),
  UNIQUE KEY `services_uuid_idx` (`uuid`)
) ENGINE=InnoDB AUTO_INCREMENT=3 DEFAULT CHARSET=utf8mb3 COLLATE=utf8mb3_general_ci;
INSERT INTO `services` VALUES ('2026-11-28 02:09:28','2026-11-28 02:09:29',NULL,0,1,'anchor@fake','cinder-volume','cinder-volume',0,0,'nova',NULL,NULL,'3.20','1.39','disabled',0,NULL,NULL,'5513ab6d-87da-44fc-81e3-ca864769bd62');
INSERT INTO `services` VALUES ('2026-11-28 02:09:28','2026-11-28 02:09:39',NULL,0,2,'anchor','cinder-scheduler','cinder-scheduler',1,0,'nova',NULL,NULL,'3.12','1.39','not-capable',0,NULL,NULL,'ce84f0dd-6130-4f00-b2dc-849428a5dcd4');
CREATE TABLE `snapshot_metadata` (
  `created_at` datetime DEFAULT NULL,
  `updated_at` datetime DEFAULT NULL,
  `deleted_at` datetime DEFAULT NULL,
  `deleted` tinyint(1) DEFAULT NULL,
  `id` int(11) NOT NULL AUTO_INCREMENT,
  `snapshot_id` varchar(36) NOT NULL,
  `key` varchar(255) DEFAULT NULL,
  `value` varchar(255) DEFAULT NULL,
  PRIMARY KEY (`id`),
  KEY `ix_snapshot_metadata_snapshot_id` (`snapshot_id`),
  CONSTRAINT `snapshot_metadata_ibfk_1` FOREIGN KEY (`snapshot_id`) REFERENCES `snapshots` (`id`)
) ENGINE=InnoDB AUTO_INCREMENT=2 DEFAULT CHARSET=utf8mb3 COLLATE=utf8mb3_general_ci;
INSERT INTO `snapshot_metadata` VALUES ('2026-11-28 02:09:32',NULL,NULL,0,1,'bafeff21-396d-4725-9b24-300113b85278','kind','nightly');
CREATE TABLE `snapshots` (
  `created_at` datetime DEFAULT NULL,
  `updated_at` datetime DEFAULT NULL,
  `deleted_at` datetime DEFAULT NULL,
  `deleted` tinyint(1) DEFAULT NULL,
  `id` varchar(36) NOT NULL,
  `volume_id` varchar(36) NOT NULL,
  `user_id` varchar(255) DEFAULT NULL,
  `project_id` varchar(255) DEFAULT NULL,
  `status` varchar(255) DEFAULT NULL,
  `progress` varchar(255) DEFAULT NULL,
  `volume_size` int(11) DEFAULT NULL,
  `scheduled_at` datetime DEFAULT NULL,
  `display_name` varchar(255) DEFAULT NULL,
  `display_description` varchar(255) DEFAULT NULL,
  `provider_location` varchar(255) DEFAULT NULL,
  `encryption_key_id` varchar(36) DEFAULT NULL,
  `volume_type_id` varchar(36) NOT NULL,
  `cgsnapshot_id` varchar(36) DEFAULT NULL,
  `provider_id` varchar(255) DEFAULT NULL,
  `provider_auth` varchar(255) DEFAULT NULL,
  `group_snapshot_id` varchar(36) DEFAULT NULL,
  `use_quota` tinyint(1) NOT NULL DEFAULT 1,
  PRIMARY KEY (`id`),
  KEY `ix_snapshots_volume_id` (`volume_id`),
  KEY `ix_snapshots_group_snapshot_id` (`group_snapshot_id`),
  KEY `ix_snapshots_cgsnapshot_id` (`cgsnapshot_id`),
  KEY `snapshots_deleted_project_id_idx` (`deleted`,`project_id`),
  CONSTRAINT `snapshots_ibfk_1` FOREIGN KEY (`cgsnapshot_id`) REFERENCES `cgsnapshots` (`id`),
  CONSTRAINT `snapshots_ibfk_2` FOREIGN KEY (`group_snapshot_id`) REFERENCES `group_snapshots` (`id`),
  CONSTRAINT `snapshots_volume_id_fkey` FOREIGN KEY (`volume_id`) REFERENCES `volumes` (`id`)
) ENGINE=InnoDB DEFAULT CHARSET=utf8mb3 COLLATE=utf8mb3_general_ci;
INSERT INTO `snapshots` VALUES ('2026-11-28 02:09:32','2026-11-28 02:09:33',NULL,0,'bafeff21-396d-4725-9b24-300113b85278','2c7c57f6-b274-4325-b9a5-9d4ea0955133','admin','3a5c1e6f8b2d4c0e9f7a1b2c3d4e5f60','available','100%',3,NULL,'nightly','before upgrade',NULL,NULL,'8451fdbc-7859-42bb-aca2-20c95ddfc20c',NULL,NULL,NULL,NULL,1);
CREATE TABLE `transfers` (
  `created_at` datetime DEFAULT NULL,
  `updated_at` datetime DEFAULT NULL,
  `deleted_at` datetime DEFAULT NULL,
  `deleted` tinyint(1) DEFAULT NULL,
  `id` varchar(36) NOT NULL,
  `volume_id` varchar(36) NOT NULL,
  `display_name` varchar(255) DEFAULT NULL,
  `salt` varchar(255) DEFAULT NULL,
  `crypt_hash` varchar(255) DEFAULT NULL,
  `expires_at` datetime DEFAULT NULL,
  `no_snapshots` tinyint(1) DEFAULT NULL,
  `source_project_id` varchar(255) DEFAULT NULL,
  `destination_project_id` varchar(255) DEFAULT NULL,
  `accepted` tinyint(1) DEFAULT NULL,
  PRIMARY KEY (`id`),
  KEY `ix_transfers_volume_id` (`volume_id`),
  CONSTRAINT `transfers_ibfk_1` FOREIGN KEY (`volume_id`) REFERENCES `volumes` (`id`)
) ENGINE=InnoDB DEFAULT CHARSET=utf8mb3 COLLATE=utf8mb3_general_ci;
CREATE TABLE `volume_admin_metadata` (
  `created_at` datetime DEFAULT NULL,
  `updated_at` datetime DEFAULT NULL,
  `deleted_at` datetime DEFAULT NULL,
  `deleted` tinyint(1) DEFAULT NULL,
  `id` int(11) NOT NULL AUTO_INCREMENT,
  `volume_id` varchar(36) NOT NULL,
  `key` varchar(255) DEFAULT NULL,
  `value` varchar(255) DEFAULT NULL,
  PRIMARY KEY (`id`),
  KEY `ix_volume_admin_metadata_volume_id` (`volume_id`),
  CONSTRAINT `volume_admin_metadata_ibfk_1` FOREIGN KEY (`volume_id`) REFERENCES `volumes` (`id`)
) ENGINE=InnoDB DEFAULT CHARSET=utf8mb3 COLLATE=utf8mb3_general_ci;
CREATE TABLE `volume_attachment` (
  `created_at` datetime DEFAULT NULL,
  `updated_at` datetime DEFAULT NULL,
  `deleted_at` datetime DEFAULT NULL,
  `deleted` tinyint(1) DEFAULT NULL,
  `id` varchar(36) NOT NULL,
  `volume_id` varchar(36) NOT NULL,
  `attached_host` varchar(255) DEFAULT NULL,
  `instance_uuid` varchar(36) DEFAULT NULL,
  `mountpoint` varchar(255) DEFAULT NULL,
  `attach_time` datetime DEFAULT NULL,
  `detach_time` datetime DEFAULT NULL,
  `attach_mode` varchar(36) DEFAULT NULL,
  `attach_status` varchar(255) DEFAULT NULL,
  `connection_info` text DEFAULT NULL,
  `connector` text DEFAULT NULL,
  PRIMARY KEY (`id`),
  KEY `ix_volume_attachment_volume_id` (`volume_id`),
  CONSTRAINT `volume_attachment_ibfk_1` FOREIGN KEY (`volume_id`) REFERENCES `volumes` (`id`)
) ENGINE=InnoDB DEFAULT CHARSET=utf8mb3 COLLATE=utf8mb3_general_ci;
INSERT INTO `volume_attachment` VALUES ('2026-11-28 02:09:31','2026-11-28 02:09:31',NULL,0,'5652f9d0-179e-45dc-a01e-aa2690fcf999','b1012d15-36d0-424b-b4e5-28ebea1e3dea','compute-1','11111111-1111-4111-8111-111111111111','na','2026-11-28 02:09:31',NULL,'rw','attached','{\"target_discovered\": false, \"target_iqn\": \"iqn.2010-10.org.openstack:volume-b1012d15-36d0-424b-b4e5-28ebea1e3dea\", \"target_portal\": \"127.0.0.1:3260\", \"target_lun\": 0, \"volume_id\": \"b1012d15-36d0-424b-b4e5-28ebea1e3dea\", \"access_mode\": \"rw\", \"qos_specs\": null, \"encrypted\": false, \"cacheable\": false, \"driver_volume_type\": \"iscsi\", \"attachment_id\": \"5652f9d0-179e-45dc-a01e-aa2690fcf999\", \"enforce_multipath\": false}','{\"host\": \"compute-1\", \"ip\": \"10.0.0.11\", \"initiator\": \"iqn.1993-08.org.debian:01:compute-1\", \"platform\": \"x86_64\", \"os_type\": \"linux\", \"multipath\": false, \"mode\": null}');
INSERT INTO `volume_attachment` VALUES ('2026-11-28 02:09:31','2026-11-28 02:09:32',NULL,0,'77469b46-3494-414c-9fda-f6aee8d90d23','b1012d15-36d0-424b-b4e5-28ebea1e3dea','compute-2','22222222-2222-4222-8222-222222222222','na','2026-11-28 02:09:32',NULL,'ro','attached','{\"target_discovered\": false, \"target_iqn\": \"iqn.2010-10.org.openstack:volume-b1012d15-36d0-424b-b4e5-28ebea1e3dea\", \"target_portal\": \"127.0.0.1:3260\", \"target_lun\": 0, \"volume_id\": \"b1012d15-36d0-424b-b4e5-28ebea1e3dea\", \"access_mode\": \"rw\", \"qos_specs\": null, \"encrypted\": false, \"cacheable\": false, \"driver_volume_type\": \"iscsi\", \"attachment_id\": \"77469b46-3494-414c-9fda-f6aee8d90d23\", \"enforce_multipath\": false}','{\"host\": \"compute-2\", \"ip\": \"10.0.0.12\", \"initiator\": \"iqn.1993-08.org.debian:01:compute-1\", \"platform\": \"x86_64\", \"os_type\": \"linux\", \"multipath\": false, \"mode\": null}');
INSERT INTO `volume_attachment` VALUES ('2026-11-28 02:09:34','2026-11-28 02:09:34',NULL,0,'b201807e-e2d8-45c5-a306-e1a3c98b7106','519a06dd-93ff-4de5-83f4-3aa20d3a02c5',NULL,'33333333-3333-4333-8333-333333333333',NULL,NULL,NULL,'rw','reserved','{}',NULL);
CREATE TABLE `volume_glance_metadata` (
  `created_at` datetime DEFAULT NULL,
  `updated_at` datetime DEFAULT NULL,
  `deleted_at` datetime DEFAULT NULL,
  `deleted` tinyint(1) DEFAULT NULL,
  `id` int(11) NOT NULL AUTO_INCREMENT,
  `volume_id` varchar(36) DEFAULT NULL,
  `snapshot_id` varchar(36) DEFAULT NULL,
  `key` varchar(255) DEFAULT NULL,
  `value` text DEFAULT NULL,
  PRIMARY KEY (`id`),
  KEY `ix_volume_glance_metadata_snapshot_id` (`snapshot_id`),
  KEY `ix_volume_glance_metadata_volume_id` (`volume_id`),
  CONSTRAINT `volume_glance_metadata_ibfk_1` FOREIGN KEY (`volume_id`) REFERENCES `volumes` (`id`),
  CONSTRAINT `volume_glance_metadata_ibfk_2` FOREIGN KEY (`snapshot_id`) REFERENCES `snapshots` (`id`),
  CONSTRAINT `CONSTRAINT_1` CHECK (`deleted` in (0,1))
) ENGINE=InnoDB DEFAULT CHARSET=utf8mb3 COLLATE=utf8mb3_general_ci;
CREATE TABLE `volume_metadata` (
  `created_at` datetime DEFAULT NULL,
  `updated_at` datetime DEFAULT NULL,
  `deleted_at` datetime DEFAULT NULL,
  `deleted` tinyint(1) DEFAULT NULL,
  `id` int(11) NOT NULL AUTO_INCREMENT,
  `volume_id` varchar(36) NOT NULL,
  `key` varchar(255) DEFAULT NULL,
  `value` varchar(255) DEFAULT NULL,
  PRIMARY KEY (`id`),
  KEY `ix_volume_metadata_volume_id` (`volume_id`),
  CONSTRAINT `volume_metadata_ibfk_1` FOREIGN KEY (`volume_id`) REFERENCES `volumes` (`id`)
) ENGINE=InnoDB AUTO_INCREMENT=3 DEFAULT CHARSET=utf8mb3 COLLATE=utf8mb3_general_ci;
INSERT INTO `volume_metadata` VALUES ('2026-11-28 02:09:30',NULL,NULL,0,1,'5871c9f8-aaba-490d-af4f-5ac6658998e2','owner','ops');
INSERT INTO `volume_metadata` VALUES ('2026-11-28 02:09:30',NULL,NULL,0,2,'5871c9f8-aaba-490d-af4f-5ac6658998e2','tier','bronze');
CREATE TABLE `volume_type_extra_specs` (
  `created_at` datetime DEFAULT NULL,
  `updated_at` datetime DEFAULT NULL,
  `deleted_at` datetime DEFAULT NULL,
  `deleted` tinyint(1) DEFAULT NULL,
  `id` int(11) NOT NULL AUTO_INCREMENT,
  `volume_type_id` varchar(36) NOT NULL,
  `key` varchar(255) DEFAULT NULL,
  `value` varchar(255) DEFAULT NULL,
  PRIMARY KEY (`id`),
  KEY `ix_volume_type_extra_specs_volume_type_id` (`volume_type_id`),
  CONSTRAINT `volume_type_extra_specs_ibfk_1` FOREIGN KEY (`volume_type_id`) REFERENCES `volume_types` (`id`)
) ENGINE=InnoDB AUTO_INCREMENT=4 DEFAULT CHARSET=utf8mb3 COLLATE=utf8mb3_general_ci;
INSERT INTO `volume_type_extra_specs` VALUES ('2026-11-28 02:09:29',NULL,NULL,0,1,'7edebbc4-d3ee-41ab-8779-2e8f74fcb006','multiattach','<is> True');
INSERT INTO `volume_type_extra_specs` VALUES ('2026-11-28 02:09:29',NULL,NULL,0,2,'8451fdbc-7859-42bb-aca2-20c95ddfc20c','volume_backend_name','fake');
INSERT INTO `volume_type_extra_specs` VALUES ('2026-11-28 02:09:29',NULL,NULL,0,3,'8451fdbc-7859-42bb-aca2-20c95ddfc20c','acme:tier','1');
CREATE TABLE `volume_type_projects` (
  `id` int(11) NOT NULL AUTO_INCREMENT,
  `created_at` datetime DEFAULT NULL,
  `updated_at` datetime DEFAULT NULL,
  `deleted_at` datetime DEFAULT NULL,
  `volume_type_id` varchar(36) DEFAULT NULL,
  `project_id` varchar(255) DEFAULT NULL,
  `deleted` int(11) DEFAULT NULL,
  PRIMARY KEY (`id`),
  UNIQUE KEY `volume_type_id` (`volume_type_id`,`project_id`,`deleted`),
  CONSTRAINT `volume_type_projects_ibfk_1` FOREIGN KEY (`volume_type_id`) REFERENCES `volume_types` (`id`)
) ENGINE=InnoDB AUTO_INCREMENT=2 DEFAULT CHARSET=utf8mb3 COLLATE=utf8mb3_general_ci;
INSERT INTO `volume_type_projects` VALUES (1,'2026-11-28 02:09:29',NULL,NULL,'55026da2-06e0-4c1d-ab3e-da1b0db3898d','0b1c2d3e4f5061728394a5b6c7d8e9f0',0);
CREATE TABLE `volume_types` (
  `created_at` datetime DEFAULT NULL,
  `updated_at` datetime DEFAULT NULL,
  `deleted_at` datetime DEFAULT NULL,
  `deleted` tinyint(1) DEFAULT NULL,
  `id` varchar(36) NOT NULL,
  `name` varchar(255) DEFAULT NULL,
  `qos_specs_id` varchar(36) DEFAULT NULL,
  `is_public` tinyint(1) DEFAULT NULL,
  `description` varchar(255) DEFAULT NULL,
  PRIMARY KEY (`id`),
  KEY `ix_volume_types_qos_specs_id` (`qos_specs_id`),
  CONSTRAINT `volume_types_ibfk_1` FOREIGN KEY (`qos_specs_id`) REFERENCES `quality_of_service_specs` (`id`)
) ENGINE=InnoDB DEFAULT CHARSET=utf8mb3 COLLATE=utf8mb3_general_ci;
INSERT INTO `volume_types` VALUES ('2026-11-28 02:09:29',NULL,NULL,0,'55026da2-06e0-4c1d-ab3e-da1b0db3898d','private',NULL,0,NULL);
INSERT INTO `volume_types` VALUES ('2026-11-28 02:09:29',NULL,NULL,0,'7edebbc4-d3ee-41ab-8779-2e8f74fcb006','multiattach',NULL,1,'shared disks');
INSERT INTO `volume_types` VALUES ('2026-11-28 02:09:29','2026-11-28 02:09:29',NULL,0,'8451fdbc-7859-42bb-aca2-20c95ddfc20c','gold','516c71c5-1bee-4f9c-828e-b5d2a9769326',1,NULL);
INSERT INTO `volume_types` VALUES ('2026-11-28 02:09:23','2026-11-28 02:09:23',NULL,0,'8b9011a9-9937-4645-ac95-34396970d98c','__DEFAULT__',NULL,1,'Default Volume Type');
INSERT INTO `volume_types` VALUES ('2026-11-28 02:09:29',NULL,'2026-11-28 02:09:29',1,'c9986201-2f8f-443a-9b1e-4fbc647b04ca','gone',NULL,1,NULL);
CREATE TABLE `volumes` (
  `created_at` datetime DEFAULT NULL,
  `updated_at` datetime DEFAULT NULL,
  `deleted_at` datetime DEFAULT NULL,
  `deleted` tinyint(1) DEFAULT NULL,
  `id` varchar(36) NOT NULL,
  `ec2_id` varchar(255) DEFAULT NULL,
  `user_id` varchar(255) DEFAULT NULL,
  `project_id` varchar(255) DEFAULT NULL,
  `host` varchar(255) DEFAULT NULL,
  `size` int(11) DEFAULT NULL,
  `availability_zone` varchar(255) DEFAULT NULL,
  `status` varchar(255) DEFAULT NULL,
  `attach_status` varchar(255) DEFAULT NULL,
  `scheduled_at` datetime DEFAULT NULL,
  `launched_at` datetime DEFAULT NULL,
  `terminated_at` datetime DEFAULT NULL,
  `display_name` varchar(255) DEFAULT NULL,
  `display_description` varchar(255) DEFAULT NULL,
  `provider_location` varchar(256) DEFAULT NULL,
  `provider_auth` varchar(256) DEFAULT NULL,
  `snapshot_id` varchar(36) DEFAULT NULL,
  `volume_type_id` varchar(36) NOT NULL,
  `source_volid` varchar(36) DEFAULT NULL,
  `bootable` tinyint(1) DEFAULT NULL,
  `provider_geometry` varchar(255) DEFAULT NULL,
  `_name_id` varchar(36) DEFAULT NULL,
  `encryption_key_id` varchar(36) DEFAULT NULL,
  `migration_status` varchar(255) DEFAULT NULL,
  `replication_status` varchar(255) DEFAULT NULL,
  `replication_extended_status` varchar(255) DEFAULT NULL,
  `replication_driver_data` varchar(255) DEFAULT NULL,
  `consistencygroup_id` varchar(36) DEFAULT NULL,
  `provider_id` varchar(255) DEFAULT NULL,
  `multiattach` tinyint(1) DEFAULT NULL,
  `previous_status` varchar(255) DEFAULT NULL,
  `cluster_name` varchar(255) DEFAULT NULL,
  `group_id` varchar(36) DEFAULT NULL,
  `service_uuid` varchar(36) DEFAULT NULL,
  `shared_targets` tinyint(1) DEFAULT NULL,
  `use_quota` tinyint(1) NOT NULL DEFAULT 1,
  PRIMARY KEY (`id`),
  KEY `ix_volumes_consistencygroup_id` (`consistencygroup_id`),
  KEY `volumes_service_uuid_idx` (`service_uuid`,`deleted`),
  KEY `ix_volumes_group_id` (`group_id`),
  KEY `volumes_deleted_project_id_idx` (`deleted`,`project_id`),
  KEY `volumes_deleted_host_idx` (`deleted`,`host`),
  CONSTRAINT `volumes_ibfk_1` FOREIGN KEY (`consistencygroup_id`) REFERENCES `consistencygroups` (`id`),
  CONSTRAINT `volumes_ibfk_2` FOREIGN KEY (`group_id`) REFERENCES `groups` (`id`),
  CONSTRAINT `volumes_ibfk_3` FOREIGN KEY (`service_uuid`) REFERENCES `services` (`uuid`)
) ENGINE=InnoDB DEFAULT CHARSET=utf8mb3 COLLATE=utf8mb3_general_ci;
INSERT INTO `volumes` VALUES ('2026-11-28 02:09:35','2026-11-28 02:09:36',NULL,0,'13e431f1-29e7-44a0-af0c-62ebd2a6e79d',NULL,'admin','3a5c1e6f8b2d4c0e9f7a1b2c3d4e5f60','anchor@fake#fake',1,'nova','error','detached','2026-11-28 02:09:35','2026-11-28 02:09:36',NULL,'broken',NULL,'fake:13e431f1-29e7-44a0-af0c-62ebd2a6e79d',NULL,NULL,'8b9011a9-9937-4645-ac95-34396970d98c',NULL,0,NULL,NULL,NULL,NULL,NULL,NULL,NULL,NULL,NULL,0,NULL,NULL,NULL,'5513ab6d-87da-44fc-81e3-ca864769bd62',1,1);
INSERT INTO `volumes` VALUES ('2026-11-28 02:09:32','2026-11-28 02:09:32',NULL,0,'2c7c57f6-b274-4325-b9a5-9d4ea0955133',NULL,'admin','3a5c1e6f8b2d4c0e9f7a1b2c3d4e5f60','anchor@fake#fake',3,'nova','available','detached','2026-11-28 02:09:32','2026-11-28 02:09:32',NULL,'gold-data',NULL,'fake:2c7c57f6-b274-4325-b9a5-9d4ea0955133',NULL,NULL,'8451fdbc-7859-42bb-aca2-20c95ddfc20c',NULL,0,NULL,NULL,NULL,NULL,NULL,NULL,NULL,NULL,NULL,0,NULL,NULL,NULL,'5513ab6d-87da-44fc-81e3-ca864769bd62',1,1);
INSERT INTO `volumes` VALUES ('2026-11-28 02:09:35','2026-11-28 02:09:35',NULL,0,'48bc9a16-f63a-4138-8975-caa9dff2bf40',NULL,'admin','3a5c1e6f8b2d4c0e9f7a1b2c3d4e5f60','anchor@fake#fake',1,'nova','available','detached','2026-11-28 02:09:35','2026-11-28 02:09:35',NULL,'no-storage',NULL,'fake:48bc9a16-f63a-4138-8975-caa9dff2bf40',NULL,NULL,'8b9011a9-9937-4645-ac95-34396970d98c',NULL,0,NULL,NULL,NULL,NULL,NULL,NULL,NULL,NULL,NULL,0,NULL,NULL,NULL,'5513ab6d-87da-44fc-81e3-ca864769bd62',1,1);
INSERT INTO `volumes` VALUES ('2026-11-28 02:09:36','2026-11-28 02:09:37','2026-11-28 02:09:37',1,'4f39e81d-ec86-44d7-a60f-50663b6f0eb2',NULL,'admin','3a5c1e6f8b2d4c0e9f7a1b2c3d4e5f60','anchor@fake#fake',1,'nova','deleted','detached','2026-11-28 02:09:36','2026-11-28 02:09:36','2026-11-28 02:09:37','deleted',NULL,'fake:4f39e81d-ec86-44d7-a60f-50663b6f0eb2',NULL,NULL,'8b9011a9-9937-4645-ac95-34396970d98c',NULL,0,NULL,NULL,NULL,NULL,NULL,NULL,NULL,NULL,NULL,0,NULL,NULL,NULL,'5513ab6d-87da-44fc-81e3-ca864769bd62',1,1);
INSERT INTO `volumes` VALUES ('2026-11-28 02:09:34','2026-11-28 02:09:34',NULL,0,'519a06dd-93ff-4de5-83f4-3aa20d3a02c5',NULL,'admin','3a5c1e6f8b2d4c0e9f7a1b2c3d4e5f60','anchor@fake#fake',1,'nova','reserved','detached','2026-11-28 02:09:34','2026-11-28 02:09:34',NULL,'reserved',NULL,'fake:519a06dd-93ff-4de5-83f4-3aa20d3a02c5',NULL,NULL,'8b9011a9-9937-4645-ac95-34396970d98c',NULL,0,NULL,NULL,NULL,NULL,NULL,NULL,NULL,NULL,NULL,0,NULL,NULL,NULL,'5513ab6d-87da-44fc-81e3-ca864769bd62',1,1);
INSERT INTO `volumes` VALUES ('2026-11-28 02:09:30','2026-11-28 02:09:30',NULL,0,'5871c9f8-aaba-490d-af4f-5ac6658998e2',NULL,'admin','3a5c1e6f8b2d4c0e9f7a1b2c3d4e5f60','anchor@fake#fake',1,'nova','available','detached','2026-11-28 02:09:30','2026-11-28 02:09:30',NULL,'plain',NULL,'fake:5871c9f8-aaba-490d-af4f-5ac6658998e2',NULL,NULL,'8b9011a9-9937-4645-ac95-34396970d98c',NULL,1,NULL,NULL,NULL,NULL,NULL,NULL,NULL,NULL,NULL,0,NULL,NULL,NULL,'5513ab6d-87da-44fc-81e3-ca864769bd62',1,1);
INSERT INTO `volumes` VALUES ('2026-11-28 02:09:33','2026-11-28 02:09:33',NULL,0,'6ec08c5a-7c53-4859-83d4-8fa3478f6ee8',NULL,'admin','3a5c1e6f8b2d4c0e9f7a1b2c3d4e5f60','anchor@fake#fake',3,'nova','available','detached','2026-11-28 02:09:33','2026-11-28 02:09:33',NULL,'from-snapshot',NULL,'fake:6ec08c5a-7c53-4859-83d4-8fa3478f6ee8',NULL,'bafeff21-396d-4725-9b24-300113b85278','8451fdbc-7859-42bb-aca2-20c95ddfc20c',NULL,0,NULL,NULL,NULL,NULL,NULL,NULL,NULL,NULL,NULL,0,NULL,NULL,NULL,'5513ab6d-87da-44fc-81e3-ca864769bd62',1,1);
INSERT INTO `volumes` VALUES ('2026-11-28 02:09:37','2026-11-28 02:09:37',NULL,0,'af12acbb-a41a-4fea-9c7b-2278a81500bd',NULL,'admin','0b1c2d3e4f5061728394a5b6c7d8e9f0','anchor@fake#fake',1,'nova','available','detached','2026-11-28 02:09:37','2026-11-28 02:09:37',NULL,'other-project',NULL,'fake:af12acbb-a41a-4fea-9c7b-2278a81500bd',NULL,NULL,'55026da2-06e0-4c1d-ab3e-da1b0db3898d',NULL,0,NULL,NULL,NULL,NULL,NULL,NULL,NULL,NULL,NULL,0,NULL,NULL,NULL,'5513ab6d-87da-44fc-81e3-ca864769bd62',1,1);
INSERT INTO `volumes` VALUES ('2026-11-28 02:09:31','2026-11-28 02:09:32',NULL,0,'b1012d15-36d0-424b-b4e5-28ebea1e3dea',NULL,'admin','3a5c1e6f8b2d4c0e9f7a1b2c3d4e5f60','anchor@fake#fake',2,'nova','in-use','attached','2026-11-28 02:09:31','2026-11-28 02:09:31',NULL,'shared-disk','quorum disk','fake:b1012d15-36d0-424b-b4e5-28ebea1e3dea',NULL,NULL,'7edebbc4-d3ee-41ab-8779-2e8f74fcb006',NULL,0,NULL,NULL,NULL,NULL,NULL,NULL,NULL,NULL,NULL,1,NULL,NULL,NULL,'5513ab6d-87da-44fc-81e3-ca864769bd62',1,1);
CREATE TABLE `workers` (
  `created_at` datetime DEFAULT NULL,
  `updated_at` datetime(6) DEFAULT NULL,
  `deleted_at` datetime DEFAULT NULL,
  `deleted` tinyint(1) DEFAULT NULL,
  `id` int(11) NOT NULL AUTO_INCREMENT,
  `resource_type` varchar(40) NOT NULL,
  `resource_id` varchar(36) NOT NULL,
  `status` varchar(255) NOT NULL,
  `service_id` int(11) DEFAULT NULL,
  `race_preventer` int(11) NOT NULL DEFAULT 0,
  PRIMARY KEY (`id`),
  UNIQUE KEY `resource_type` (`resource_type`,`resource_id`),
  KEY `ix_workers_service_id` (`service_id`),
  CONSTRAINT `workers_ibfk_1` FOREIGN KEY (`service_id`) REFERENCES `services` (`id`)
) ENGINE=InnoDB AUTO_INCREMENT=13 DEFAULT CHARSET=utf8mb3 COLLATE=utf8mb3_general_ci;
INSERT INTO `workers` VALUES ('2026-11-28 02:09:23','2026-11-28 02:09:23.000123',NULL,0,1,'SENTINEL','SUB-SECOND','OK',NULL,0);
