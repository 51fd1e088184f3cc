-- Made by tests/cinder_import/make-fixture.sh: cinder==29.0.0 from PyPI, db sync,
-- then make_fixture.py through Cinder's API. Do not edit by hand.







CREATE TABLE public.alembic_version (
    version_num character varying(32) NOT NULL
);



CREATE TABLE public.attachment_specs (
    created_at timestamp without time zone,
    updated_at timestamp without time zone,
    deleted_at timestamp without time zone,
    deleted boolean,
    id integer NOT NULL,
    attachment_id character varying(36) NOT NULL,
    key character varying(255),
    value character varying(255)
);



CREATE SEQUENCE public.attachment_specs_id_seq
    AS integer
    START WITH 1
    INCREMENT BY 1
    NO MINVALUE
    NO MAXVALUE
    CACHE 1;



ALTER SEQUENCE public.attachment_specs_id_seq OWNED BY public.attachment_specs.id;



CREATE TABLE public.backup_metadata (
    created_at timestamp without time zone,
    updated_at timestamp without time zone,
    deleted_at timestamp without time zone,
    deleted boolean,
    id integer NOT NULL,
    backup_id character varying(36) NOT NULL,
    key character varying(255),
    value character varying(255)
);



CREATE SEQUENCE public.backup_metadata_id_seq
    AS integer
    START WITH 1
    INCREMENT BY 1
    NO MINVALUE
    NO MAXVALUE
    CACHE 1;



ALTER SEQUENCE public.backup_metadata_id_seq OWNED BY public.backup_metadata.id;



CREATE TABLE public.backups (
    created_at timestamp without time zone,
    updated_at timestamp without time zone,
    deleted_at timestamp without time zone,
    deleted boolean,
    id character varying(36) NOT NULL,
    volume_id character varying(36) NOT NULL,
    user_id character varying(255),
    project_id character varying(255),
    host character varying(255),
    availability_zone character varying(255),
    display_name character varying(255),
    display_description character varying(255),
    container character varying(255),
    status character varying(255),
    fail_reason character varying(255),
    service_metadata character varying(255),
    service character varying(255),
    size integer,
    object_count integer,
    parent_id character varying(36),
    temp_volume_id character varying(36),
    temp_snapshot_id character varying(36),
    num_dependent_backups integer,
    snapshot_id character varying(36),
    data_timestamp timestamp without time zone,
    restore_volume_id character varying(36),
    encryption_key_id character varying(36)
);



CREATE TABLE public.cgsnapshots (
    created_at timestamp without time zone,
    updated_at timestamp without time zone,
    deleted_at timestamp without time zone,
    deleted boolean,
    id character varying(36) NOT NULL,
    consistencygroup_id character varying(36) NOT NULL,
    user_id character varying(255),
    project_id character varying(255),
    name character varying(255),
    description character varying(255),
    status character varying(255)
);



CREATE TABLE public.clusters (
    created_at timestamp without time zone,
    updated_at timestamp without time zone,
    deleted_at timestamp without time zone,
    deleted boolean,
    id integer NOT NULL,
    name character varying(255) NOT NULL,
    "binary" character varying(255) NOT NULL,
    disabled boolean,
    disabled_reason character varying(255),
    race_preventer integer NOT NULL,
    replication_status character varying(36),
    active_backend_id character varying(255),
    frozen boolean DEFAULT false NOT NULL
);



CREATE SEQUENCE public.clusters_id_seq
    AS integer
    START WITH 1
    INCREMENT BY 1
    NO MINVALUE
    NO MAXVALUE
    CACHE 1;



ALTER SEQUENCE public.clusters_id_seq OWNED BY public.clusters.id;



CREATE TABLE public.consistencygroups (
    created_at timestamp without time zone,
    updated_at timestamp without time zone,
    deleted_at timestamp without time zone,
    deleted boolean,
    id character varying(36) NOT NULL,
    user_id character varying(255),
    project_id character varying(255),
    host character varying(255),
    availability_zone character varying(255),
    name character varying(255),
    description character varying(255),
    volume_type_id character varying(255),
    status character varying(255),
    cgsnapshot_id character varying(36),
    source_cgid character varying(36),
    cluster_name character varying(255)
);



CREATE TABLE public.default_volume_types (
    created_at timestamp without time zone,
    updated_at timestamp without time zone,
    deleted_at timestamp without time zone,
    volume_type_id character varying(36),
    project_id character varying(255) NOT NULL,
    deleted boolean
);



CREATE TABLE public.driver_initiator_data (
    created_at timestamp without time zone,
    updated_at timestamp without time zone,
    id integer NOT NULL,
    initiator character varying(255) NOT NULL,
    namespace character varying(255) NOT NULL,
    key character varying(255) NOT NULL,
    value character varying(255)
);



CREATE SEQUENCE public.driver_initiator_data_id_seq
    AS integer
    START WITH 1
    INCREMENT BY 1
    NO MINVALUE
    NO MAXVALUE
    CACHE 1;



ALTER SEQUENCE public.driver_initiator_data_id_seq OWNED BY public.driver_initiator_data.id;



CREATE TABLE public.encryption (
    created_at timestamp without time zone,
    updated_at timestamp without time zone,
    deleted_at timestamp without time zone,
    deleted boolean,
    cipher character varying(255),
    control_location character varying(255) NOT NULL,
    key_size integer,
    provider character varying(255) NOT NULL,
    volume_type_id character varying(36) NOT NULL,
    encryption_id character varying(36) NOT NULL
);



CREATE TABLE public.group_snapshots (
    created_at timestamp without time zone,
    updated_at timestamp without time zone,
    deleted_at timestamp without time zone,
    deleted boolean,
    id character varying(36) NOT NULL,
    group_id character varying(36) NOT NULL,
    user_id character varying(255),
    project_id character varying(255),
    name character varying(255),
    description character varying(255),
    status character varying(255),
    group_type_id character varying(36)
);



CREATE TABLE public.group_type_projects (
    id integer NOT NULL,
    created_at timestamp without time zone,
    updated_at timestamp without time zone,
    deleted_at timestamp without time zone,
    group_type_id character varying(36),
    project_id character varying(255),
    deleted boolean
);



CREATE SEQUENCE public.group_type_projects_id_seq
    AS integer
    START WITH 1
    INCREMENT BY 1
    NO MINVALUE
    NO MAXVALUE
    CACHE 1;



ALTER SEQUENCE public.group_type_projects_id_seq OWNED BY public.group_type_projects.id;



CREATE TABLE public.group_type_specs (
    id integer NOT NULL,
    key character varying(255),
    value character varying(255),
    group_type_id character varying(36) NOT NULL,
    created_at timestamp without time zone,
    updated_at timestamp without time zone,
    deleted_at timestamp without time zone,
    deleted boolean
);



CREATE SEQUENCE public.group_type_specs_id_seq
    AS integer
    START WITH 1
    INCREMENT BY 1
    NO MINVALUE
    NO MAXVALUE
    CACHE 1;



ALTER SEQUENCE public.group_type_specs_id_seq OWNED BY public.group_type_specs.id;



CREATE TABLE public.group_types (
    id character varying(36) NOT NULL,
    name character varying(255) NOT NULL,
    description character varying(255),
    created_at timestamp without time zone,
    updated_at timestamp without time zone,
    deleted_at timestamp without time zone,
    deleted boolean,
    is_public boolean
);



CREATE TABLE public.group_volume_type_mapping (
    created_at timestamp without time zone,
    updated_at timestamp without time zone,
    deleted_at timestamp without time zone,
    deleted boolean,
    id integer NOT NULL,
    volume_type_id character varying(36) NOT NULL,
    group_id character varying(36) NOT NULL
);



CREATE SEQUENCE public.group_volume_type_mapping_id_seq
    AS integer
    START WITH 1
    INCREMENT BY 1
    NO MINVALUE
    NO MAXVALUE
    CACHE 1;



ALTER SEQUENCE public.group_volume_type_mapping_id_seq OWNED BY public.group_volume_type_mapping.id;



CREATE TABLE public.groups (
    created_at timestamp without time zone,
    updated_at timestamp without time zone,
    deleted_at timestamp without time zone,
    deleted boolean,
    id character varying(36) NOT NULL,
    user_id character varying(255),
    project_id character varying(255),
    cluster_name character varying(255),
    host character varying(255),
    availability_zone character varying(255),
    name character varying(255),
    description character varying(255),
    group_type_id character varying(36),
    status character varying(255),
    group_snapshot_id character varying(36),
    source_group_id character varying(36),
    replication_status character varying(255)
);



CREATE TABLE public.image_volume_cache_entries (
    image_updated_at timestamp without time zone,
    id integer NOT NULL,
    host character varying(255) NOT NULL,
    image_id character varying(36) NOT NULL,
    volume_id character varying(36) NOT NULL,
    size integer NOT NULL,
    last_used timestamp without time zone NOT NULL,
    cluster_name character varying(255)
);



CREATE SEQUENCE public.image_volume_cache_entries_id_seq
    AS integer
    START WITH 1
    INCREMENT BY 1
    NO MINVALUE
    NO MAXVALUE
    CACHE 1;



ALTER SEQUENCE public.image_volume_cache_entries_id_seq OWNED BY public.image_volume_cache_entries.id;



CREATE TABLE public.messages (
    id character varying(36) NOT NULL,
    project_id character varying(255) NOT NULL,
    request_id character varying(255),
    resource_type character varying(36),
    resource_uuid character varying(255),
    event_id character varying(255) NOT NULL,
    message_level character varying(255) NOT NULL,
    created_at timestamp without time zone,
    updated_at timestamp without time zone,
    deleted_at timestamp without time zone,
    deleted boolean,
    expires_at timestamp without time zone,
    detail_id character varying(10),
    action_id character varying(10)
);



CREATE TABLE public.quality_of_service_specs (
    created_at timestamp without time zone,
    updated_at timestamp without time zone,
    deleted_at timestamp without time zone,
    deleted boolean,
    id character varying(36) NOT NULL,
    specs_id character varying(36),
    key character varying(255),
    value character varying(255)
);



CREATE TABLE public.quota_classes (
    created_at timestamp without time zone,
    updated_at timestamp without time zone,
    deleted_at timestamp without time zone,
    deleted boolean,
    id integer NOT NULL,
    class_name character varying(255),
    resource character varying(300),
    hard_limit integer
);



CREATE SEQUENCE public.quota_classes_id_seq
    AS integer
    START WITH 1
    INCREMENT BY 1
    NO MINVALUE
    NO MAXVALUE
    CACHE 1;



ALTER SEQUENCE public.quota_classes_id_seq OWNED BY public.quota_classes.id;



CREATE TABLE public.quota_usages (
    created_at timestamp without time zone,
    updated_at timestamp without time zone,
    deleted_at timestamp without time zone,
    deleted boolean,
    id integer NOT NULL,
    project_id character varying(255),
    resource character varying(300),
    in_use integer NOT NULL,
    reserved integer NOT NULL,
    until_refresh integer,
    race_preventer boolean
);



CREATE SEQUENCE public.quota_usages_id_seq
    AS integer
    START WITH 1
    INCREMENT BY 1
    NO MINVALUE
    NO MAXVALUE
    CACHE 1;



ALTER SEQUENCE public.quota_usages_id_seq OWNED BY public.quota_usages.id;



CREATE TABLE public.quotas (
    id integer NOT NULL,
    created_at timestamp without time zone,
    updated_at timestamp without time zone,
    deleted_at timestamp without time zone,
    deleted boolean,
    project_id character varying(255),
    resource character varying(300) NOT NULL,
    hard_limit integer,
    allocated integer
);



CREATE SEQUENCE public.quotas_id_seq
    AS integer
    START WITH 1
    INCREMENT BY 1
    NO MINVALUE
    NO MAXVALUE
    CACHE 1;



ALTER SEQUENCE public.quotas_id_seq OWNED BY public.quotas.id;



CREATE TABLE public.reservations (
    created_at timestamp without time zone,
    updated_at timestamp without time zone,
    deleted_at timestamp without time zone,
    deleted boolean,
    id integer NOT NULL,
    uuid character varying(36) NOT NULL,
    usage_id integer,
    project_id character varying(255),
    resource character varying(300),
    delta integer NOT NULL,
    expire timestamp without time zone,
    allocated_id integer
);



CREATE SEQUENCE public.reservations_id_seq
    AS integer
    START WITH 1
    INCREMENT BY 1
    NO MINVALUE
    NO MAXVALUE
    CACHE 1;



ALTER SEQUENCE public.reservations_id_seq OWNED BY public.reservations.id;



CREATE TABLE public.services (
    created_at timestamp without time zone,
    updated_at timestamp without time zone,
    deleted_at timestamp without time zone,
    deleted boolean,
    id integer NOT NULL,
    host character varying(255),
    "binary" character varying(255),
    topic character varying(255),
    report_count integer NOT NULL,
    disabled boolean,
    availability_zone character varying(255),
    disabled_reason character varying(255),
    modified_at timestamp without time zone,
    rpc_current_version character varying(36),
    object_current_version character varying(36),
    replication_status character varying(36),
    frozen boolean,
    active_backend_id character varying(255),
    cluster_name character varying(255),
    uuid character varying(36)
);



CREATE SEQUENCE public.services_id_seq
    AS integer
    START WITH 1
    INCREMENT BY 1
    NO MINVALUE
    NO MAXVALUE
    CACHE 1;



ALTER SEQUENCE public.services_id_seq OWNED BY public.services.id;



CREATE TABLE public.snapshot_metadata (
    created_at timestamp without time zone,
    updated_at timestamp without time zone,
    deleted_at timestamp without time zone,
    deleted boolean,
    id integer NOT NULL,
    snapshot_id character varying(36) NOT NULL,
    key character varying(255),
    value character varying(255)
);



CREATE SEQUENCE public.snapshot_metadata_id_seq
    AS integer
    START WITH 1
    INCREMENT BY 1
    NO MINVALUE
    NO MAXVALUE
    CACHE 1;



ALTER SEQUENCE public.snapshot_metadata_id_seq OWNED BY public.snapshot_metadata.id;



CREATE TABLE public.snapshots (
    created_at timestamp without time zone,
    updated_at timestamp without time zone,
    deleted_at timestamp without time zone,
    deleted boolean,
    id character varying(36) NOT NULL,
    volume_id character varying(36) NOT NULL,
    user_id character varying(255),
    project_id character varying(255),
    status character varying(255),
    progress character varying(255),
    volume_size integer,
    scheduled_at timestamp without time zone,
    display_name character varying(255),
    display_description character varying(255),
    provider_location character varying(255),
    encryption_key_id character varying(36),
    volume_type_id character varying(36) NOT NULL,
    cgsnapshot_id character varying(36),
    provider_id character varying(255),
    provider_auth character varying(255),
    group_snapshot_id character varying(36),
    use_quota boolean DEFAULT true NOT NULL
);



CREATE TABLE public.transfers (
    created_at timestamp without time zone,
    updated_at timestamp without time zone,
    deleted_at timestamp without time zone,
    deleted boolean,
    id character varying(36) NOT NULL,
    volume_id character varying(36) NOT NULL,
    display_name character varying(255),
    salt character varying(255),
    crypt_hash character varying(255),
    expires_at timestamp without time zone,
    no_snapshots boolean,
    source_project_id character varying(255),
    destination_project_id character varying(255),
    accepted boolean
);



CREATE TABLE public.volume_admin_metadata (
    created_at timestamp without time zone,
    updated_at timestamp without time zone,
    deleted_at timestamp without time zone,
    deleted boolean,
    id integer NOT NULL,
    volume_id character varying(36) NOT NULL,
    key character varying(255),
    value character varying(255)
);



CREATE SEQUENCE public.volume_admin_metadata_id_seq
    AS integer
    START WITH 1
    INCREMENT BY 1
    NO MINVALUE
    NO MAXVALUE
    CACHE 1;



ALTER SEQUENCE public.volume_admin_metadata_id_seq OWNED BY public.volume_admin_metadata.id;



CREATE TABLE public.volume_attachment (
    created_at timestamp without time zone,
    updated_at timestamp without time zone,
    deleted_at timestamp without time zone,
    deleted boolean,
    id character varying(36) NOT NULL,
    volume_id character varying(36) NOT NULL,
    attached_host character varying(255),
    instance_uuid character varying(36),
    mountpoint character varying(255),
    attach_time timestamp without time zone,
    detach_time timestamp without time zone,
    attach_mode character varying(36),
    attach_status character varying(255),
    connection_info text,
    connector text
);



CREATE TABLE public.volume_glance_metadata (
    created_at timestamp without time zone,
    updated_at timestamp without time zone,
    deleted_at timestamp without time zone,
    deleted boolean,
    id integer NOT NULL,
    volume_id character varying(36),
    snapshot_id character varying(36),
    key character varying(255),
    value text
);



CREATE SEQUENCE public.volume_glance_metadata_id_seq
    AS integer
    START WITH 1
    INCREMENT BY 1
    NO MINVALUE
    NO MAXVALUE
    CACHE 1;



ALTER SEQUENCE public.volume_glance_metadata_id_seq OWNED BY public.volume_glance_metadata.id;



CREATE TABLE public.volume_metadata (
    created_at timestamp without time zone,
    updated_at timestamp without time zone,
    deleted_at timestamp without time zone,
    deleted boolean,
    id integer NOT NULL,
    volume_id character varying(36) NOT NULL,
    key character varying(255),
    value character varying(255)
);



CREATE SEQUENCE public.volume_metadata_id_seq
    AS integer
    START WITH 1
    INCREMENT BY 1
    NO MINVALUE
    NO MAXVALUE
    CACHE 1;



ALTER SEQUENCE public.volume_metadata_id_seq OWNED BY public.volume_metadata.id;



CREATE TABLE public.volume_type_extra_specs (
    created_at timestamp without time zone,
    updated_at timestamp without time zone,
    deleted_at timestamp without time zone,
    deleted boolean,
    id integer NOT NULL,
    volume_type_id character varying(36) NOT NULL,
    key character varying(255),
    value character varying(255)
);



CREATE SEQUENCE public.volume_type_extra_specs_id_seq
    AS integer
    START WITH 1
    INCREMENT BY 1
    NO MINVALUE
    NO MAXVALUE
    CACHE 1;



ALTER SEQUENCE public.volume_type_extra_specs_id_seq OWNED BY public.volume_type_extra_specs.id;



CREATE TABLE public.volume_type_projects (
    id integer NOT NULL,
    created_at timestamp without time zone,
    updated_at timestamp without time zone,
    deleted_at timestamp without time zone,
    volume_type_id character varying(36),
    project_id character varying(255),
    deleted integer
);



CREATE SEQUENCE public.volume_type_projects_id_seq
    AS integer
    START WITH 1
    INCREMENT BY 1
    NO MINVALUE
    NO MAXVALUE
    CACHE 1;



ALTER SEQUENCE public.volume_type_projects_id_seq OWNED BY public.volume_type_projects.id;



CREATE TABLE public.volume_types (
    created_at timestamp without time zone,
    updated_at timestamp without time zone,
    deleted_at timestamp without time zone,
    deleted boolean,
    id character varying(36) NOT NULL,
    name character varying(255),
    qos_specs_id character varying(36),
    is_public boolean,
    description character varying(255)
);



CREATE TABLE public.volumes (
    created_at timestamp without time zone,
    updated_at timestamp without time zone,
    deleted_at timestamp without time zone,
    deleted boolean,
    id character varying(36) NOT NULL,
    ec2_id character varying(255),
    user_id character varying(255),
    project_id character varying(255),
    host character varying(255),
    size integer,
    availability_zone character varying(255),
    status character varying(255),
    attach_status character varying(255),
    scheduled_at timestamp without time zone,
    launched_at timestamp without time zone,
    terminated_at timestamp without time zone,
    display_name character varying(255),
    display_description character varying(255),
    provider_location character varying(256),
    provider_auth character varying(256),
    snapshot_id character varying(36),
    volume_type_id character varying(36) NOT NULL,
    source_volid character varying(36),
    bootable boolean,
    provider_geometry character varying(255),
    _name_id character varying(36),
    encryption_key_id character varying(36),
    migration_status character varying(255),
    replication_status character varying(255),
    replication_extended_status character varying(255),
    replication_driver_data character varying(255),
    consistencygroup_id character varying(36),
    provider_id character varying(255),
    multiattach boolean,
    previous_status character varying(255),
    cluster_name character varying(255),
    group_id character varying(36),
    service_uuid character varying(36),
    shared_targets boolean,
    use_quota boolean DEFAULT true NOT NULL
);



CREATE TABLE public.workers (
    created_at timestamp without time zone,
    updated_at timestamp without time zone,
    deleted_at timestamp without time zone,
    deleted boolean,
    id integer NOT NULL,
    resource_type character varying(40) NOT NULL,
    resource_id character varying(36) NOT NULL,
    status character varying(255) NOT NULL,
    service_id integer,
    race_preventer integer DEFAULT 0 NOT NULL
);



CREATE SEQUENCE public.workers_id_seq
    AS integer
    START WITH 1
    INCREMENT BY 1
    NO MINVALUE
    NO MAXVALUE
    CACHE 1;



ALTER SEQUENCE public.workers_id_seq OWNED BY public.workers.id;



ALTER TABLE ONLY public.attachment_specs ALTER COLUMN id SET DEFAULT nextval('public.attachment_specs_id_seq'::regclass);



ALTER TABLE ONLY public.backup_metadata ALTER COLUMN id SET DEFAULT nextval('public.backup_metadata_id_seq'::regclass);



ALTER TABLE ONLY public.clusters ALTER COLUMN id SET DEFAULT nextval('public.clusters_id_seq'::regclass);



ALTER TABLE ONLY public.driver_initiator_data ALTER COLUMN id SET DEFAULT nextval('public.driver_initiator_data_id_seq'::regclass);



ALTER TABLE ONLY public.group_type_projects ALTER COLUMN id SET DEFAULT nextval('public.group_type_projects_id_seq'::regclass);



ALTER TABLE ONLY public.group_type_specs ALTER COLUMN id SET DEFAULT nextval('public.group_type_specs_id_seq'::regclass);



ALTER TABLE ONLY public.group_volume_type_mapping ALTER COLUMN id SET DEFAULT nextval('public.group_volume_type_mapping_id_seq'::regclass);



ALTER TABLE ONLY public.image_volume_cache_entries ALTER COLUMN id SET DEFAULT nextval('public.image_volume_cache_entries_id_seq'::regclass);



ALTER TABLE ONLY public.quota_classes ALTER COLUMN id SET DEFAULT nextval('public.quota_classes_id_seq'::regclass);



ALTER TABLE ONLY public.quota_usages ALTER COLUMN id SET DEFAULT nextval('public.quota_usages_id_seq'::regclass);



ALTER TABLE ONLY public.quotas ALTER COLUMN id SET DEFAULT nextval('public.quotas_id_seq'::regclass);



ALTER TABLE ONLY public.reservations ALTER COLUMN id SET DEFAULT nextval('public.reservations_id_seq'::regclass);



ALTER TABLE ONLY public.services ALTER COLUMN id SET DEFAULT nextval('public.services_id_seq'::regclass);



ALTER TABLE ONLY public.snapshot_metadata ALTER COLUMN id SET DEFAULT nextval('public.snapshot_metadata_id_seq'::regclass);



ALTER TABLE ONLY public.volume_admin_metadata ALTER COLUMN id SET DEFAULT nextval('public.volume_admin_metadata_id_seq'::regclass);



ALTER TABLE ONLY public.volume_glance_metadata ALTER COLUMN id SET DEFAULT nextval('public.volume_glance_metadata_id_seq'::regclass);



ALTER TABLE ONLY public.volume_metadata ALTER COLUMN id SET DEFAULT nextval('public.volume_metadata_id_seq'::regclass);



ALTER TABLE ONLY public.volume_type_extra_specs ALTER COLUMN id SET DEFAULT nextval('public.volume_type_extra_specs_id_seq'::regclass);



ALTER TABLE ONLY public.volume_type_projects ALTER COLUMN id SET DEFAULT nextval('public.volume_type_projects_id_seq'::regclass);



ALTER TABLE ONLY public.workers ALTER COLUMN id SET DEFAULT nextval('public.workers_id_seq'::regclass);



INSERT INTO public.alembic_version VALUES ('9c74c1c6971f');




































INSERT INTO public.group_type_specs VALUES (1, 'consistent_group_snapshot_enabled', '<is> True', '54d67e24-ec5a-46cc-a8a9-929b46d23a0f', '2026-11-27 16:50:59.63472', '2026-11-27 16:50:59.63472', NULL, false);



INSERT INTO public.group_types VALUES ('54d67e24-ec5a-46cc-a8a9-929b46d23a0f', 'default_cgsnapshot_type', 'Default group type for migrating cgsnapshot', '2026-11-27 16:50:59.63472', '2026-11-27 16:50:59.63472', NULL, false, true);















INSERT INTO public.quality_of_service_specs VALUES ('2026-11-27 16:51:03.855171', NULL, NULL, false, 'd49146b7-25a5-4a5d-8add-7a4cb922c4fc', NULL, 'QoS_Specs_Name', 'gold-qos');
INSERT INTO public.quality_of_service_specs VALUES ('2026-11-27 16:51:03.856509', NULL, NULL, false, '6d27b5a8-f44a-4cd9-95d7-bb8edda9dcc0', 'd49146b7-25a5-4a5d-8add-7a4cb922c4fc', 'consumer', 'back-end');
INSERT INTO public.quality_of_service_specs VALUES ('2026-11-27 16:51:03.85737', NULL, NULL, false, 'ccca6d03-ea3e-441f-b311-d00cf94cce87', 'd49146b7-25a5-4a5d-8add-7a4cb922c4fc', 'total_iops_sec', '500');
INSERT INTO public.quality_of_service_specs VALUES ('2026-11-27 16:51:03.858112', NULL, NULL, false, '4351a3d2-e189-44fc-95c3-976cbc2bcd53', 'd49146b7-25a5-4a5d-8add-7a4cb922c4fc', 'read_bytes_sec', '1048576');



INSERT INTO public.quota_classes VALUES ('2026-11-27 16:50:59.428786', NULL, NULL, false, 1, 'default', 'volumes', -1);
INSERT INTO public.quota_classes VALUES ('2026-11-27 16:50:59.428786', NULL, NULL, false, 2, 'default', 'snapshots', -1);
INSERT INTO public.quota_classes VALUES ('2026-11-27 16:50:59.428786', NULL, NULL, false, 3, 'default', 'gigabytes', -1);
INSERT INTO public.quota_classes VALUES ('2026-11-27 16:50:59.428786', NULL, NULL, false, 4, 'default', 'per_volume_gigabytes', -1);
INSERT INTO public.quota_classes VALUES ('2026-11-27 16:50:59.428786', NULL, NULL, false, 5, 'default', 'groups', -1);
INSERT INTO public.quota_classes VALUES ('2026-11-27 16:50:59.906001', NULL, NULL, false, 7, 'default', 'backup_gigabytes', -1);
INSERT INTO public.quota_classes VALUES ('2026-11-27 16:50:59.901647', '2026-11-27 16:51:04.085646', NULL, false, 6, 'default', 'backups', 7);



INSERT INTO public.quota_usages VALUES ('2026-11-27 16:51:04.892354', '2026-11-27 16:51:04.929942', NULL, false, 5, '3a5c1e6f8b2d4c0e9f7a1b2c3d4e5f60', 'volumes_multiattach', 1, 0, NULL, true);
INSERT INTO public.quota_usages VALUES ('2026-11-27 16:51:04.89677', '2026-11-27 16:51:04.931474', NULL, false, 6, '3a5c1e6f8b2d4c0e9f7a1b2c3d4e5f60', 'gigabytes_multiattach', 2, 0, NULL, true);
INSERT INTO public.quota_usages VALUES ('2026-11-27 16:51:04.171418', '2026-11-27 16:51:10.37214', NULL, false, 1, '3a5c1e6f8b2d4c0e9f7a1b2c3d4e5f60', 'volumes', 7, 0, NULL, true);
INSERT INTO public.quota_usages VALUES ('2026-11-27 16:51:06.364342', '2026-11-27 16:51:06.409129', NULL, false, 9, '3a5c1e6f8b2d4c0e9f7a1b2c3d4e5f60', 'snapshots', 1, 0, NULL, true);
INSERT INTO public.quota_usages VALUES ('2026-11-27 16:51:04.176659', '2026-11-27 16:51:10.374897', NULL, false, 2, '3a5c1e6f8b2d4c0e9f7a1b2c3d4e5f60', 'gigabytes', 15, 0, NULL, true);
INSERT INTO public.quota_usages VALUES ('2026-11-27 16:51:06.366011', '2026-11-27 16:51:06.413137', NULL, false, 10, '3a5c1e6f8b2d4c0e9f7a1b2c3d4e5f60', 'snapshots_gold', 1, 0, NULL, true);
INSERT INTO public.quota_usages VALUES ('2026-11-27 16:51:04.179617', '2026-11-27 16:51:10.376609', NULL, false, 3, '3a5c1e6f8b2d4c0e9f7a1b2c3d4e5f60', 'volumes___DEFAULT__', 4, 0, NULL, true);
INSERT INTO public.quota_usages VALUES ('2026-11-27 16:51:04.18446', '2026-11-27 16:51:10.378187', NULL, false, 4, '3a5c1e6f8b2d4c0e9f7a1b2c3d4e5f60', 'gigabytes___DEFAULT__', 4, 0, NULL, true);
INSERT INTO public.quota_usages VALUES ('2026-11-27 16:51:10.354485', '2026-11-27 16:51:10.405467', NULL, false, 11, '0b1c2d3e4f5061728394a5b6c7d8e9f0', 'volumes', 1, 0, NULL, true);
INSERT INTO public.quota_usages VALUES ('2026-11-27 16:51:05.753288', '2026-11-27 16:51:07.066316', NULL, false, 7, '3a5c1e6f8b2d4c0e9f7a1b2c3d4e5f60', 'volumes_gold', 2, 0, NULL, true);
INSERT INTO public.quota_usages VALUES ('2026-11-27 16:51:05.756837', '2026-11-27 16:51:07.067844', NULL, false, 8, '3a5c1e6f8b2d4c0e9f7a1b2c3d4e5f60', 'gigabytes_gold', 9, 0, NULL, true);
INSERT INTO public.quota_usages VALUES ('2026-11-27 16:51:10.35931', '2026-11-27 16:51:10.407238', NULL, false, 12, '0b1c2d3e4f5061728394a5b6c7d8e9f0', 'gigabytes', 1, 0, NULL, true);
INSERT INTO public.quota_usages VALUES ('2026-11-27 16:51:10.362579', '2026-11-27 16:51:10.408815', NULL, false, 13, '0b1c2d3e4f5061728394a5b6c7d8e9f0', 'volumes_private', 1, 0, NULL, true);
INSERT INTO public.quota_usages VALUES ('2026-11-27 16:51:10.367818', '2026-11-27 16:51:10.410611', NULL, false, 14, '0b1c2d3e4f5061728394a5b6c7d8e9f0', 'gigabytes_private', 1, 0, NULL, true);



INSERT INTO public.quotas VALUES (1, '2026-11-27 16:51:04.050557', NULL, NULL, false, '3a5c1e6f8b2d4c0e9f7a1b2c3d4e5f60', 'volumes', 20, NULL);
INSERT INTO public.quotas VALUES (2, '2026-11-27 16:51:04.054359', NULL, NULL, false, '3a5c1e6f8b2d4c0e9f7a1b2c3d4e5f60', 'gigabytes', 500, NULL);
INSERT INTO public.quotas VALUES (3, '2026-11-27 16:51:04.057353', NULL, NULL, false, '3a5c1e6f8b2d4c0e9f7a1b2c3d4e5f60', 'snapshots', 15, NULL);
INSERT INTO public.quotas VALUES (4, '2026-11-27 16:51:04.060263', NULL, NULL, false, '3a5c1e6f8b2d4c0e9f7a1b2c3d4e5f60', 'volumes_gold', 5, NULL);



INSERT INTO public.reservations VALUES ('2026-11-27 16:51:04.190307', '2026-11-27 16:51:04.249505', '2026-11-27 16:51:04.247484', true, 1, 'b70ec15e-7c73-4b8e-92b7-028c06523611', 1, '3a5c1e6f8b2d4c0e9f7a1b2c3d4e5f60', 'volumes', 1, '2026-11-28 16:51:04.159772', NULL);
INSERT INTO public.reservations VALUES ('2026-11-27 16:51:04.193578', '2026-11-27 16:51:04.251261', '2026-11-27 16:51:04.250258', true, 2, '034f10d1-f0ae-45dc-b58c-1bdb69519c56', 2, '3a5c1e6f8b2d4c0e9f7a1b2c3d4e5f60', 'gigabytes', 1, '2026-11-28 16:51:04.159772', NULL);
INSERT INTO public.reservations VALUES ('2026-11-27 16:51:04.195327', '2026-11-27 16:51:04.252784', '2026-11-27 16:51:04.251863', true, 3, '69578adf-258d-4bf6-961f-09b656876d6e', 3, '3a5c1e6f8b2d4c0e9f7a1b2c3d4e5f60', 'volumes___DEFAULT__', 1, '2026-11-28 16:51:04.159772', NULL);
INSERT INTO public.reservations VALUES ('2026-11-27 16:51:04.1969', '2026-11-27 16:51:04.254331', '2026-11-27 16:51:04.253365', true, 4, '437fa8b9-a8bf-42aa-9823-497b3f4a42e5', 4, '3a5c1e6f8b2d4c0e9f7a1b2c3d4e5f60', 'gigabytes___DEFAULT__', 1, '2026-11-28 16:51:04.159772', NULL);
INSERT INTO public.reservations VALUES ('2026-11-27 16:51:04.900519', '2026-11-27 16:51:04.927436', '2026-11-27 16:51:04.926285', true, 5, 'd7075a31-2f09-4a52-b0aa-72ad8508adc4', 1, '3a5c1e6f8b2d4c0e9f7a1b2c3d4e5f60', 'volumes', 1, '2026-11-28 16:51:04.884445', NULL);
INSERT INTO public.reservations VALUES ('2026-11-27 16:51:04.902315', '2026-11-27 16:51:04.929031', '2026-11-27 16:51:04.928103', true, 6, 'd3edcf95-1620-4247-9acc-8c53173b02a2', 2, '3a5c1e6f8b2d4c0e9f7a1b2c3d4e5f60', 'gigabytes', 2, '2026-11-28 16:51:04.884445', NULL);
INSERT INTO public.reservations VALUES ('2026-11-27 16:51:04.904136', '2026-11-27 16:51:04.930551', '2026-11-27 16:51:04.929656', true, 7, '62ed29b1-98e2-43bb-a1cf-301607db1892', 5, '3a5c1e6f8b2d4c0e9f7a1b2c3d4e5f60', 'volumes_multiattach', 1, '2026-11-28 16:51:04.884445', NULL);
INSERT INTO public.reservations VALUES ('2026-11-27 16:51:04.905817', '2026-11-27 16:51:04.932106', '2026-11-27 16:51:04.931197', true, 8, '3e580cd7-254b-4662-aaa3-efb4696777d8', 6, '3a5c1e6f8b2d4c0e9f7a1b2c3d4e5f60', 'gigabytes_multiattach', 2, '2026-11-28 16:51:04.884445', NULL);
INSERT INTO public.reservations VALUES ('2026-11-27 16:51:05.759814', '2026-11-27 16:51:05.781202', '2026-11-27 16:51:05.780281', true, 9, '0e610cc9-9989-407a-974f-6635283acbff', 1, '3a5c1e6f8b2d4c0e9f7a1b2c3d4e5f60', 'volumes', 1, '2026-11-28 16:51:05.746531', NULL);
INSERT INTO public.reservations VALUES ('2026-11-27 16:51:05.761299', '2026-11-27 16:51:05.782573', '2026-11-27 16:51:05.781749', true, 10, 'e7e46071-18a1-41ba-a0fc-e21fc1807267', 2, '3a5c1e6f8b2d4c0e9f7a1b2c3d4e5f60', 'gigabytes', 3, '2026-11-28 16:51:05.746531', NULL);
INSERT INTO public.reservations VALUES ('2026-11-27 16:51:05.762845', '2026-11-27 16:51:05.784142', '2026-11-27 16:51:05.783186', true, 11, '2f9ac61d-0f9c-4367-a1b8-058b6cf26174', 7, '3a5c1e6f8b2d4c0e9f7a1b2c3d4e5f60', 'volumes_gold', 1, '2026-11-28 16:51:05.746531', NULL);
INSERT INTO public.reservations VALUES ('2026-11-27 16:51:05.764364', '2026-11-27 16:51:05.785479', '2026-11-27 16:51:05.784662', true, 12, '1c76f163-e42b-46bd-9645-45dc9353b4bb', 8, '3a5c1e6f8b2d4c0e9f7a1b2c3d4e5f60', 'gigabytes_gold', 3, '2026-11-28 16:51:05.746531', NULL);
INSERT INTO public.reservations VALUES ('2026-11-27 16:51:06.368655', '2026-11-27 16:51:06.409679', '2026-11-27 16:51:06.408777', true, 13, '53712c40-cc3e-4730-b5d7-247eae52f740', 9, '3a5c1e6f8b2d4c0e9f7a1b2c3d4e5f60', 'snapshots', 1, '2026-11-28 16:51:06.358564', NULL);
INSERT INTO public.reservations VALUES ('2026-11-27 16:51:06.369865', '2026-11-27 16:51:06.411012', '2026-11-27 16:51:06.410222', true, 14, '734af35f-0832-4d4f-900a-c7d65e0a8de4', 2, '3a5c1e6f8b2d4c0e9f7a1b2c3d4e5f60', 'gigabytes', 3, '2026-11-28 16:51:06.358564', NULL);
INSERT INTO public.reservations VALUES ('2026-11-27 16:51:06.371174', '2026-11-27 16:51:06.41238', '2026-11-27 16:51:06.411663', true, 15, 'e02d7468-e6ef-4bbd-a83b-88c2c2c06a0c', 8, '3a5c1e6f8b2d4c0e9f7a1b2c3d4e5f60', 'gigabytes_gold', 3, '2026-11-28 16:51:06.358564', NULL);
INSERT INTO public.reservations VALUES ('2026-11-27 16:51:06.372277', '2026-11-27 16:51:06.41362', '2026-11-27 16:51:06.412911', true, 16, '9b6019c3-5d15-4d60-8358-e53fe647af7d', 10, '3a5c1e6f8b2d4c0e9f7a1b2c3d4e5f60', 'snapshots_gold', 1, '2026-11-28 16:51:06.358564', NULL);
INSERT INTO public.reservations VALUES ('2026-11-27 16:51:07.024817', '2026-11-27 16:51:07.063899', '2026-11-27 16:51:07.062752', true, 17, 'c1abf845-e858-4af8-98e7-ea3ac9948d60', 1, '3a5c1e6f8b2d4c0e9f7a1b2c3d4e5f60', 'volumes', 1, '2026-11-28 16:51:07.010854', NULL);
INSERT INTO public.reservations VALUES ('2026-11-27 16:51:07.026561', '2026-11-27 16:51:07.06545', '2026-11-27 16:51:07.064503', true, 18, 'f8ce2188-5753-4dc1-ba29-85342db0169f', 2, '3a5c1e6f8b2d4c0e9f7a1b2c3d4e5f60', 'gigabytes', 3, '2026-11-28 16:51:07.010854', NULL);
INSERT INTO public.reservations VALUES ('2026-11-27 16:51:07.030584', '2026-11-27 16:51:07.066919', '2026-11-27 16:51:07.066022', true, 19, '3f6c4ceb-4279-4740-b558-034cfc2faa73', 7, '3a5c1e6f8b2d4c0e9f7a1b2c3d4e5f60', 'volumes_gold', 1, '2026-11-28 16:51:07.010854', NULL);
INSERT INTO public.reservations VALUES ('2026-11-27 16:51:07.033165', '2026-11-27 16:51:07.068489', '2026-11-27 16:51:07.067483', true, 20, '53cc6314-e5f2-4dbf-b698-14df62c9c0aa', 8, '3a5c1e6f8b2d4c0e9f7a1b2c3d4e5f60', 'gigabytes_gold', 3, '2026-11-28 16:51:07.010854', NULL);
INSERT INTO public.reservations VALUES ('2026-11-27 16:51:07.676231', '2026-11-27 16:51:07.698875', '2026-11-27 16:51:07.69787', true, 21, 'c4643657-97ef-4bdd-affc-534e1ef25abb', 1, '3a5c1e6f8b2d4c0e9f7a1b2c3d4e5f60', 'volumes', 1, '2026-11-28 16:51:07.670556', NULL);
INSERT INTO public.reservations VALUES ('2026-11-27 16:51:07.678005', '2026-11-27 16:51:07.700398', '2026-11-27 16:51:07.699452', true, 22, '7d83264e-d1b7-42bd-bafc-97efe180b913', 2, '3a5c1e6f8b2d4c0e9f7a1b2c3d4e5f60', 'gigabytes', 1, '2026-11-28 16:51:07.670556', NULL);
INSERT INTO public.reservations VALUES ('2026-11-27 16:51:07.679761', '2026-11-27 16:51:07.701819', '2026-11-27 16:51:07.700954', true, 23, '7a9bfd3d-abd3-47f9-9ca5-716e4825f62b', 3, '3a5c1e6f8b2d4c0e9f7a1b2c3d4e5f60', 'volumes___DEFAULT__', 1, '2026-11-28 16:51:07.670556', NULL);
INSERT INTO public.reservations VALUES ('2026-11-27 16:51:07.681344', '2026-11-27 16:51:07.70322', '2026-11-27 16:51:07.702347', true, 24, 'c67af95f-47ea-412d-995e-80fbab6d3d5f', 4, '3a5c1e6f8b2d4c0e9f7a1b2c3d4e5f60', 'gigabytes___DEFAULT__', 1, '2026-11-28 16:51:07.670556', NULL);
INSERT INTO public.reservations VALUES ('2026-11-27 16:51:08.33656', '2026-11-27 16:51:08.362078', '2026-11-27 16:51:08.36099', true, 25, 'a146f615-1a17-4e7d-8de3-1aea64ea5ee7', 1, '3a5c1e6f8b2d4c0e9f7a1b2c3d4e5f60', 'volumes', 1, '2026-11-28 16:51:08.329972', NULL);
INSERT INTO public.reservations VALUES ('2026-11-27 16:51:08.338452', '2026-11-27 16:51:08.363899', '2026-11-27 16:51:08.362831', true, 26, '90650075-3326-4cab-a939-5ffa73d95ad8', 2, '3a5c1e6f8b2d4c0e9f7a1b2c3d4e5f60', 'gigabytes', 1, '2026-11-28 16:51:08.329972', NULL);
INSERT INTO public.reservations VALUES ('2026-11-27 16:51:08.340335', '2026-11-27 16:51:08.365535', '2026-11-27 16:51:08.364553', true, 27, '9b3a48e2-c771-4c93-b7d0-426951b2dc62', 3, '3a5c1e6f8b2d4c0e9f7a1b2c3d4e5f60', 'volumes___DEFAULT__', 1, '2026-11-28 16:51:08.329972', NULL);
INSERT INTO public.reservations VALUES ('2026-11-27 16:51:08.342105', '2026-11-27 16:51:08.367123', '2026-11-27 16:51:08.366152', true, 28, '6bbfa10a-87bd-4463-baab-58e17376c7ac', 4, '3a5c1e6f8b2d4c0e9f7a1b2c3d4e5f60', 'gigabytes___DEFAULT__', 1, '2026-11-28 16:51:08.329972', NULL);
INSERT INTO public.reservations VALUES ('2026-11-27 16:51:08.983925', '2026-11-27 16:51:09.019842', '2026-11-27 16:51:09.018291', true, 29, 'aca7d9a3-a83f-4c29-b3a9-94e450800d96', 1, '3a5c1e6f8b2d4c0e9f7a1b2c3d4e5f60', 'volumes', 1, '2026-11-28 16:51:08.975918', NULL);
INSERT INTO public.reservations VALUES ('2026-11-27 16:51:08.986284', '2026-11-27 16:51:09.022022', '2026-11-27 16:51:09.020685', true, 30, 'a877f662-54a7-4db8-9060-0b9ce5721007', 2, '3a5c1e6f8b2d4c0e9f7a1b2c3d4e5f60', 'gigabytes', 1, '2026-11-28 16:51:08.975918', NULL);
INSERT INTO public.reservations VALUES ('2026-11-27 16:51:08.988562', '2026-11-27 16:51:09.024231', '2026-11-27 16:51:09.022914', true, 31, '23fc6964-f74b-4c25-8238-32a16200f7ea', 3, '3a5c1e6f8b2d4c0e9f7a1b2c3d4e5f60', 'volumes___DEFAULT__', 1, '2026-11-28 16:51:08.975918', NULL);
INSERT INTO public.reservations VALUES ('2026-11-27 16:51:08.99091', '2026-11-27 16:51:09.026294', '2026-11-27 16:51:09.025', true, 32, '18984b7e-bb6a-49eb-90f8-99d4f48c5ee2', 4, '3a5c1e6f8b2d4c0e9f7a1b2c3d4e5f60', 'gigabytes___DEFAULT__', 1, '2026-11-28 16:51:08.975918', NULL);
INSERT INTO public.reservations VALUES ('2026-11-27 16:51:09.673177', '2026-11-27 16:51:09.697786', '2026-11-27 16:51:09.6968', true, 33, '0d7fc61c-1d66-4530-bbcb-3bf2700027e7', 1, '3a5c1e6f8b2d4c0e9f7a1b2c3d4e5f60', 'volumes', 1, '2026-11-28 16:51:09.666946', NULL);
INSERT INTO public.reservations VALUES ('2026-11-27 16:51:09.675066', '2026-11-27 16:51:09.699353', '2026-11-27 16:51:09.698418', true, 34, '654df460-76a0-4299-9ba1-8406cd6cefee', 2, '3a5c1e6f8b2d4c0e9f7a1b2c3d4e5f60', 'gigabytes', 1, '2026-11-28 16:51:09.666946', NULL);
INSERT INTO public.reservations VALUES ('2026-11-27 16:51:09.676705', '2026-11-27 16:51:09.700837', '2026-11-27 16:51:09.699953', true, 35, 'ffe85f75-7193-4eb6-a770-a11b538a9a9a', 3, '3a5c1e6f8b2d4c0e9f7a1b2c3d4e5f60', 'volumes___DEFAULT__', 1, '2026-11-28 16:51:09.666946', NULL);
INSERT INTO public.reservations VALUES ('2026-11-27 16:51:09.678328', '2026-11-27 16:51:09.702319', '2026-11-27 16:51:09.701434', true, 36, '5ccdde7c-cf44-4e82-8daf-e7496fa4cadb', 4, '3a5c1e6f8b2d4c0e9f7a1b2c3d4e5f60', 'gigabytes___DEFAULT__', 1, '2026-11-28 16:51:09.666946', NULL);
INSERT INTO public.reservations VALUES ('2026-11-27 16:51:10.33435', '2026-11-27 16:51:10.373425', '2026-11-27 16:51:10.370402', true, 37, '7a71717a-7aac-4fee-bb3f-aae1d35bef96', 1, '3a5c1e6f8b2d4c0e9f7a1b2c3d4e5f60', 'volumes', -1, '2026-11-28 16:51:10.312994', NULL);
INSERT INTO public.reservations VALUES ('2026-11-27 16:51:10.335962', '2026-11-27 16:51:10.375465', '2026-11-27 16:51:10.37437', true, 38, 'db854fcc-fe60-43b6-a53f-f6bcd822e263', 2, '3a5c1e6f8b2d4c0e9f7a1b2c3d4e5f60', 'gigabytes', -1, '2026-11-28 16:51:10.312994', NULL);
INSERT INTO public.reservations VALUES ('2026-11-27 16:51:10.33861', '2026-11-27 16:51:10.377151', '2026-11-27 16:51:10.376238', true, 39, '43e427d9-5993-45b2-bf98-7647abb4a1b2', 3, '3a5c1e6f8b2d4c0e9f7a1b2c3d4e5f60', 'volumes___DEFAULT__', -1, '2026-11-28 16:51:10.312994', NULL);
INSERT INTO public.reservations VALUES ('2026-11-27 16:51:10.372725', '2026-11-27 16:51:10.40616', '2026-11-27 16:51:10.405096', true, 41, '944bea5c-516f-4a0c-b26d-dcf11e583106', 11, '0b1c2d3e4f5061728394a5b6c7d8e9f0', 'volumes', 1, '2026-11-28 16:51:10.344677', NULL);
INSERT INTO public.reservations VALUES ('2026-11-27 16:51:10.375267', '2026-11-27 16:51:10.40788', '2026-11-27 16:51:10.406932', true, 42, '11c99f38-6a2a-45ab-8da8-3a63d8f84377', 12, '0b1c2d3e4f5061728394a5b6c7d8e9f0', 'gigabytes', 1, '2026-11-28 16:51:10.344677', NULL);
INSERT INTO public.reservations VALUES ('2026-11-27 16:51:10.377487', '2026-11-27 16:51:10.409548', '2026-11-27 16:51:10.408507', true, 43, '5f3d7014-a574-4423-8b2c-ff69b3727b24', 13, '0b1c2d3e4f5061728394a5b6c7d8e9f0', 'volumes_private', 1, '2026-11-28 16:51:10.344677', NULL);
INSERT INTO public.reservations VALUES ('2026-11-27 16:51:10.339785', '2026-11-27 16:51:10.378871', '2026-11-27 16:51:10.377759', true, 40, '05c5cb65-c2a1-456e-beeb-566c1e8903c6', 4, '3a5c1e6f8b2d4c0e9f7a1b2c3d4e5f60', 'gigabytes___DEFAULT__', -1, '2026-11-28 16:51:10.312994', NULL);
INSERT INTO public.reservations VALUES ('2026-11-27 16:51:10.37965', '2026-11-27 16:51:10.411325', '2026-11-27 16:51:10.410181', true, 44, '685b504c-e459-49fc-a011-383ae7097dce', 14, '0b1c2d3e4f5061728394a5b6c7d8e9f0', 'gigabytes_private', 1, '2026-11-28 16:51:10.344677', NULL);



INSERT INTO public.services VALUES ('2026-11-27 16:51:03.150895', '2026-11-27 16:51:03.357043', NULL, false, 2, 'anchor@fake', 'cinder-volume', 'cinder-volume', 0, false, 'nova', NULL, NULL, '3.20', '1.39', 'disabled', false, NULL, NULL, '19246dcf-1088-4dd5-99d9-3f0b9ecd5e23');
INSERT INTO public.services VALUES ('2026-11-27 16:51:02.975583', '2026-11-27 16:51:14.040802', NULL, false, 1, 'anchor', 'cinder-scheduler', 'cinder-scheduler', 1, false, 'nova', NULL, NULL, '3.12', '1.39', 'not-capable', false, NULL, NULL, '6ad930fd-1f74-456e-b660-ec0e96e22b44');



INSERT INTO public.snapshot_metadata VALUES ('2026-11-27 16:51:06.38121', NULL, NULL, false, 1, 'f7998705-7b25-4652-b015-7dbe57bb9854', 'kind', 'nightly');



INSERT INTO public.snapshots VALUES ('2026-11-27 16:51:06.379022', '2026-11-27 16:51:06.459378', NULL, false, 'f7998705-7b25-4652-b015-7dbe57bb9854', 'd3568ff1-0a41-4dbf-8af0-374adbc84a5b', 'admin', '3a5c1e6f8b2d4c0e9f7a1b2c3d4e5f60', 'available', '100%', 3, NULL, 'nightly', 'before upgrade', NULL, NULL, 'f48a590f-6a52-4c1b-b263-daa3f6249924', NULL, NULL, NULL, NULL, true);









INSERT INTO public.volume_attachment VALUES ('2026-11-27 16:51:05.513153', '2026-11-27 16:51:05.620574', NULL, false, '5aa4b9d5-d6e6-471d-b820-1f2960c0d299', 'e9a7e137-9300-425d-8272-b253b77d19fd', 'compute-1', '11111111-1111-4111-8111-111111111111', 'na', '2026-11-27 16:51:05.572647', NULL, 'rw', 'attached', '{"target_discovered": false, "target_iqn": "iqn.2010-10.org.openstack:volume-e9a7e137-9300-425d-8272-b253b77d19fd", "target_portal": "127.0.0.1:3260", "target_lun": 0, "volume_id": "e9a7e137-9300-425d-8272-b253b77d19fd", "access_mode": "rw", "qos_specs": null, "encrypted": false, "cacheable": false, "driver_volume_type": "iscsi", "attachment_id": "5aa4b9d5-d6e6-471d-b820-1f2960c0d299", "enforce_multipath": false}', '{"host": "compute-1", "ip": "10.0.0.11", "initiator": "iqn.1993-08.org.debian:01:compute-1", "platform": "x86_64", "os_type": "linux", "multipath": false, "mode": null}');
INSERT INTO public.volume_attachment VALUES ('2026-11-27 16:51:05.640361', '2026-11-27 16:51:05.706856', NULL, false, '82634e80-bf9a-4b96-8b58-1ae5d46f227e', 'e9a7e137-9300-425d-8272-b253b77d19fd', 'compute-2', '22222222-2222-4222-8222-222222222222', 'na', '2026-11-27 16:51:05.662102', NULL, 'ro', 'attached', '{"target_discovered": false, "target_iqn": "iqn.2010-10.org.openstack:volume-e9a7e137-9300-425d-8272-b253b77d19fd", "target_portal": "127.0.0.1:3260", "target_lun": 0, "volume_id": "e9a7e137-9300-425d-8272-b253b77d19fd", "access_mode": "rw", "qos_specs": null, "encrypted": false, "cacheable": false, "driver_volume_type": "iscsi", "attachment_id": "82634e80-bf9a-4b96-8b58-1ae5d46f227e", "enforce_multipath": false}', '{"host": "compute-2", "ip": "10.0.0.12", "initiator": "iqn.1993-08.org.debian:01:compute-1", "platform": "x86_64", "os_type": "linux", "multipath": false, "mode": null}');
INSERT INTO public.volume_attachment VALUES ('2026-11-27 16:51:08.271037', '2026-11-27 16:51:08.280716', NULL, false, '9a5653ad-c568-4cb5-82be-c80191d349e6', 'e84f092c-073d-4666-bc50-c48bf822caa5', NULL, '33333333-3333-4333-8333-333333333333', NULL, NULL, NULL, 'rw', 'reserved', '{}', NULL);






INSERT INTO public.volume_metadata VALUES ('2026-11-27 16:51:04.20903', NULL, NULL, false, 1, '21af57ab-6de3-41a8-be35-88d8b313f6be', 'owner', 'ops');
INSERT INTO public.volume_metadata VALUES ('2026-11-27 16:51:04.209037', NULL, NULL, false, 2, '21af57ab-6de3-41a8-be35-88d8b313f6be', 'tier', 'bronze');



INSERT INTO public.volume_type_extra_specs VALUES ('2026-11-27 16:51:03.891517', NULL, NULL, false, 1, 'e7873360-6a67-4fbb-9a5e-19226f8f983b', 'multiattach', '<is> True');
INSERT INTO public.volume_type_extra_specs VALUES ('2026-11-27 16:51:03.907149', NULL, NULL, false, 2, 'f48a590f-6a52-4c1b-b263-daa3f6249924', 'volume_backend_name', 'fake');
INSERT INTO public.volume_type_extra_specs VALUES ('2026-11-27 16:51:03.907155', NULL, NULL, false, 3, 'f48a590f-6a52-4c1b-b263-daa3f6249924', 'acme:tier', '1');



INSERT INTO public.volume_type_projects VALUES (1, '2026-11-27 16:51:03.969459', NULL, NULL, '8cb6066a-8d2e-4471-bd5c-ffd3f56a3472', '0b1c2d3e4f5061728394a5b6c7d8e9f0', 0);



INSERT INTO public.volume_types VALUES ('2026-11-27 16:50:59.63472', '2026-11-27 16:50:59.63472', NULL, false, '5d40a1ad-8062-47f7-96ed-66d0f3940bfc', '__DEFAULT__', NULL, true, 'Default Volume Type');
INSERT INTO public.volume_types VALUES ('2026-11-27 16:51:03.890015', NULL, NULL, false, 'e7873360-6a67-4fbb-9a5e-19226f8f983b', 'multiattach', NULL, true, 'shared disks');
INSERT INTO public.volume_types VALUES ('2026-11-27 16:51:03.904965', '2026-11-27 16:51:03.940017', NULL, false, 'f48a590f-6a52-4c1b-b263-daa3f6249924', 'gold', 'd49146b7-25a5-4a5d-8add-7a4cb922c4fc', true, NULL);
INSERT INTO public.volume_types VALUES ('2026-11-27 16:51:03.954953', NULL, NULL, false, '8cb6066a-8d2e-4471-bd5c-ffd3f56a3472', 'private', NULL, false, NULL);
INSERT INTO public.volume_types VALUES ('2026-11-27 16:51:03.979486', NULL, '2026-11-27 16:51:03.99335', true, '9933f50a-4842-4b93-a0c3-89d4c9989d63', 'gone', NULL, true, NULL);



INSERT INTO public.volumes VALUES ('2026-11-27 16:51:07.050137', '2026-11-27 16:51:07.194833', NULL, false, 'adf79924-7c25-4ff0-8abe-fc209c06ce5e', NULL, 'admin', '3a5c1e6f8b2d4c0e9f7a1b2c3d4e5f60', 'anchor@fake#fake', 3, 'nova', 'available', 'detached', '2026-11-27 16:51:07.127863', '2026-11-27 16:51:07.188631', NULL, 'from-snapshot', NULL, 'fake:adf79924-7c25-4ff0-8abe-fc209c06ce5e', NULL, 'f7998705-7b25-4652-b015-7dbe57bb9854', 'f48a590f-6a52-4c1b-b263-daa3f6249924', NULL, false, NULL, NULL, NULL, NULL, NULL, NULL, NULL, NULL, NULL, false, NULL, NULL, NULL, '19246dcf-1088-4dd5-99d9-3f0b9ecd5e23', true, true);
INSERT INTO public.volumes VALUES ('2026-11-27 16:51:04.206014', '2026-11-27 16:51:04.843154', NULL, false, '21af57ab-6de3-41a8-be35-88d8b313f6be', NULL, 'admin', '3a5c1e6f8b2d4c0e9f7a1b2c3d4e5f60', 'anchor@fake#fake', 1, 'nova', 'available', 'detached', '2026-11-27 16:51:04.330035', '2026-11-27 16:51:04.41518', NULL, 'plain', NULL, 'fake:21af57ab-6de3-41a8-be35-88d8b313f6be', NULL, NULL, '5d40a1ad-8062-47f7-96ed-66d0f3940bfc', NULL, true, NULL, NULL, NULL, NULL, NULL, NULL, NULL, NULL, NULL, false, NULL, NULL, NULL, '19246dcf-1088-4dd5-99d9-3f0b9ecd5e23', true, true);
INSERT INTO public.volumes VALUES ('2026-11-27 16:51:07.687278', '2026-11-27 16:51:08.268664', NULL, false, 'e84f092c-073d-4666-bc50-c48bf822caa5', NULL, 'admin', '3a5c1e6f8b2d4c0e9f7a1b2c3d4e5f60', 'anchor@fake#fake', 1, 'nova', 'reserved', 'detached', '2026-11-27 16:51:07.75399', '2026-11-27 16:51:07.799746', NULL, 'reserved', NULL, 'fake:e84f092c-073d-4666-bc50-c48bf822caa5', NULL, NULL, '5d40a1ad-8062-47f7-96ed-66d0f3940bfc', NULL, false, NULL, NULL, NULL, NULL, NULL, NULL, NULL, NULL, NULL, false, NULL, NULL, NULL, '19246dcf-1088-4dd5-99d9-3f0b9ecd5e23', true, true);
INSERT INTO public.volumes VALUES ('2026-11-27 16:51:04.91219', '2026-11-27 16:51:05.709005', NULL, false, 'e9a7e137-9300-425d-8272-b253b77d19fd', NULL, 'admin', '3a5c1e6f8b2d4c0e9f7a1b2c3d4e5f60', 'anchor@fake#fake', 2, 'nova', 'in-use', 'attached', '2026-11-27 16:51:04.994573', '2026-11-27 16:51:05.042623', NULL, 'shared-disk', 'quorum disk', 'fake:e9a7e137-9300-425d-8272-b253b77d19fd', NULL, NULL, 'e7873360-6a67-4fbb-9a5e-19226f8f983b', NULL, false, NULL, NULL, NULL, NULL, NULL, NULL, NULL, NULL, NULL, true, NULL, NULL, NULL, '19246dcf-1088-4dd5-99d9-3f0b9ecd5e23', true, true);
INSERT INTO public.volumes VALUES ('2026-11-27 16:51:09.684256', '2026-11-27 16:51:10.277397', '2026-11-27 16:51:10.341672', true, 'd174dedc-083a-458e-8ae0-0aceef0fdc13', NULL, 'admin', '3a5c1e6f8b2d4c0e9f7a1b2c3d4e5f60', 'anchor@fake#fake', 1, 'nova', 'deleted', 'detached', '2026-11-27 16:51:09.758362', '2026-11-27 16:51:09.808021', '2026-11-27 16:51:10.274769', 'deleted', NULL, 'fake:d174dedc-083a-458e-8ae0-0aceef0fdc13', NULL, NULL, '5d40a1ad-8062-47f7-96ed-66d0f3940bfc', NULL, false, NULL, NULL, NULL, NULL, NULL, NULL, NULL, NULL, NULL, false, NULL, NULL, NULL, '19246dcf-1088-4dd5-99d9-3f0b9ecd5e23', true, true);
INSERT INTO public.volumes VALUES ('2026-11-27 16:51:05.770028', '2026-11-27 16:51:05.883698', NULL, false, 'd3568ff1-0a41-4dbf-8af0-374adbc84a5b', NULL, 'admin', '3a5c1e6f8b2d4c0e9f7a1b2c3d4e5f60', 'anchor@fake#fake', 3, 'nova', 'available', 'detached', '2026-11-27 16:51:05.834761', '2026-11-27 16:51:05.878031', NULL, 'gold-data', NULL, 'fake:d3568ff1-0a41-4dbf-8af0-374adbc84a5b', NULL, NULL, 'f48a590f-6a52-4c1b-b263-daa3f6249924', NULL, false, NULL, NULL, NULL, NULL, NULL, NULL, NULL, NULL, NULL, false, NULL, NULL, NULL, '19246dcf-1088-4dd5-99d9-3f0b9ecd5e23', true, true);
INSERT INTO public.volumes VALUES ('2026-11-27 16:51:08.349463', '2026-11-27 16:51:08.461471', NULL, false, '003e69a8-6935-41a8-8771-a86c2b66722d', NULL, 'admin', '3a5c1e6f8b2d4c0e9f7a1b2c3d4e5f60', 'anchor@fake#fake', 1, 'nova', 'available', 'detached', '2026-11-27 16:51:08.413458', '2026-11-27 16:51:08.455471', NULL, 'no-storage', NULL, 'fake:003e69a8-6935-41a8-8771-a86c2b66722d', NULL, NULL, '5d40a1ad-8062-47f7-96ed-66d0f3940bfc', NULL, false, NULL, NULL, NULL, NULL, NULL, NULL, NULL, NULL, NULL, false, NULL, NULL, NULL, '19246dcf-1088-4dd5-99d9-3f0b9ecd5e23', true, true);
INSERT INTO public.volumes VALUES ('2026-11-27 16:51:09.001465', '2026-11-27 16:51:09.615032', NULL, false, 'ee195374-0867-4d82-bf7b-d2ed5cbb6285', NULL, 'admin', '3a5c1e6f8b2d4c0e9f7a1b2c3d4e5f60', 'anchor@fake#fake', 1, 'nova', 'error', 'detached', '2026-11-27 16:51:09.089055', '2026-11-27 16:51:09.171476', NULL, 'broken', NULL, 'fake:ee195374-0867-4d82-bf7b-d2ed5cbb6285', NULL, NULL, '5d40a1ad-8062-47f7-96ed-66d0f3940bfc', NULL, false, NULL, NULL, NULL, NULL, NULL, NULL, NULL, NULL, NULL, false, NULL, NULL, NULL, '19246dcf-1088-4dd5-99d9-3f0b9ecd5e23', true, true);
INSERT INTO public.volumes VALUES ('2026-11-27 16:51:10.391666', '2026-11-27 16:51:10.52845', NULL, false, '58c5dfd7-d459-44fb-969c-f5a9389b726e', NULL, 'admin', '0b1c2d3e4f5061728394a5b6c7d8e9f0', 'anchor@fake#fake', 1, 'nova', 'available', 'detached', '2026-11-27 16:51:10.469806', '2026-11-27 16:51:10.522363', NULL, 'other-project', NULL, 'fake:58c5dfd7-d459-44fb-969c-f5a9389b726e', NULL, NULL, '8cb6066a-8d2e-4471-bd5c-ffd3f56a3472', NULL, false, NULL, NULL, NULL, NULL, NULL, NULL, NULL, NULL, NULL, false, NULL, NULL, NULL, '19246dcf-1088-4dd5-99d9-3f0b9ecd5e23', true, true);



INSERT INTO public.workers VALUES ('2026-11-27 16:50:59.000123', '2026-11-27 16:50:59.000123', NULL, false, 1, 'SENTINEL', 'SUB-SECOND', 'OK', NULL, 0);



SELECT pg_catalog.setval('public.attachment_specs_id_seq', 1, false);



SELECT pg_catalog.setval('public.backup_metadata_id_seq', 1, false);



SELECT pg_catalog.setval('public.clusters_id_seq', 1, false);



SELECT pg_catalog.setval('public.driver_initiator_data_id_seq', 1, false);



SELECT pg_catalog.setval('public.group_type_projects_id_seq', 1, false);



SELECT pg_catalog.setval('public.group_type_specs_id_seq', 1, true);



SELECT pg_catalog.setval('public.group_volume_type_mapping_id_seq', 1, false);



SELECT pg_catalog.setval('public.image_volume_cache_entries_id_seq', 1, false);



SELECT pg_catalog.setval('public.quota_classes_id_seq', 7, true);



SELECT pg_catalog.setval('public.quota_usages_id_seq', 14, true);



SELECT pg_catalog.setval('public.quotas_id_seq', 4, true);



SELECT pg_catalog.setval('public.reservations_id_seq', 44, true);



SELECT pg_catalog.setval('public.services_id_seq', 2, true);



SELECT pg_catalog.setval('public.snapshot_metadata_id_seq', 1, true);



SELECT pg_catalog.setval('public.volume_admin_metadata_id_seq', 1, false);



SELECT pg_catalog.setval('public.volume_glance_metadata_id_seq', 1, false);



SELECT pg_catalog.setval('public.volume_metadata_id_seq', 2, true);



SELECT pg_catalog.setval('public.volume_type_extra_specs_id_seq', 3, true);



SELECT pg_catalog.setval('public.volume_type_projects_id_seq', 1, true);



SELECT pg_catalog.setval('public.workers_id_seq', 12, true);



ALTER TABLE ONLY public.alembic_version
    ADD CONSTRAINT alembic_version_pkc PRIMARY KEY (version_num);



ALTER TABLE ONLY public.attachment_specs
    ADD CONSTRAINT attachment_specs_pkey PRIMARY KEY (id);



ALTER TABLE ONLY public.backup_metadata
    ADD CONSTRAINT backup_metadata_pkey PRIMARY KEY (id);



ALTER TABLE ONLY public.backups
    ADD CONSTRAINT backups_pkey PRIMARY KEY (id);



ALTER TABLE ONLY public.cgsnapshots
    ADD CONSTRAINT cgsnapshots_pkey PRIMARY KEY (id);



ALTER TABLE ONLY public.clusters
    ADD CONSTRAINT clusters_name_binary_race_preventer_key UNIQUE (name, "binary", race_preventer);



ALTER TABLE ONLY public.clusters
    ADD CONSTRAINT clusters_pkey PRIMARY KEY (id);



ALTER TABLE ONLY public.consistencygroups
    ADD CONSTRAINT consistencygroups_pkey PRIMARY KEY (id);



ALTER TABLE ONLY public.default_volume_types
    ADD CONSTRAINT default_volume_types_pkey PRIMARY KEY (project_id);



ALTER TABLE ONLY public.driver_initiator_data
    ADD CONSTRAINT driver_initiator_data_initiator_namespace_key_key UNIQUE (initiator, namespace, key);



ALTER TABLE ONLY public.driver_initiator_data
    ADD CONSTRAINT driver_initiator_data_pkey PRIMARY KEY (id);



ALTER TABLE ONLY public.encryption
    ADD CONSTRAINT encryption_pkey PRIMARY KEY (encryption_id);



ALTER TABLE ONLY public.group_snapshots
    ADD CONSTRAINT group_snapshots_pkey PRIMARY KEY (id);



ALTER TABLE ONLY public.group_type_projects
    ADD CONSTRAINT group_type_projects_group_type_id_project_id_deleted_key UNIQUE (group_type_id, project_id, deleted);



ALTER TABLE ONLY public.group_type_projects
    ADD CONSTRAINT group_type_projects_pkey PRIMARY KEY (id);



ALTER TABLE ONLY public.group_type_specs
    ADD CONSTRAINT group_type_specs_pkey PRIMARY KEY (id);



ALTER TABLE ONLY public.group_types
    ADD CONSTRAINT group_types_pkey PRIMARY KEY (id);



ALTER TABLE ONLY public.group_volume_type_mapping
    ADD CONSTRAINT group_volume_type_mapping_pkey PRIMARY KEY (id);



ALTER TABLE ONLY public.groups
    ADD CONSTRAINT groups_pkey PRIMARY KEY (id);



ALTER TABLE ONLY public.image_volume_cache_entries
    ADD CONSTRAINT image_volume_cache_entries_pkey PRIMARY KEY (id);



ALTER TABLE ONLY public.messages
    ADD CONSTRAINT messages_pkey PRIMARY KEY (id);



ALTER TABLE ONLY public.quality_of_service_specs
    ADD CONSTRAINT quality_of_service_specs_pkey PRIMARY KEY (id);



ALTER TABLE ONLY public.quota_classes
    ADD CONSTRAINT quota_classes_pkey PRIMARY KEY (id);



ALTER TABLE ONLY public.quota_usages
    ADD CONSTRAINT quota_usages_pkey PRIMARY KEY (id);



ALTER TABLE ONLY public.quota_usages
    ADD CONSTRAINT quota_usages_project_id_resource_race_preventer_key UNIQUE (project_id, resource, race_preventer);



ALTER TABLE ONLY public.quotas
    ADD CONSTRAINT quotas_pkey PRIMARY KEY (id);



ALTER TABLE ONLY public.reservations
    ADD CONSTRAINT reservations_pkey PRIMARY KEY (id);



ALTER TABLE ONLY public.services
    ADD CONSTRAINT services_pkey PRIMARY KEY (id);



ALTER TABLE ONLY public.snapshot_metadata
    ADD CONSTRAINT snapshot_metadata_pkey PRIMARY KEY (id);



ALTER TABLE ONLY public.snapshots
    ADD CONSTRAINT snapshots_pkey PRIMARY KEY (id);



ALTER TABLE ONLY public.transfers
    ADD CONSTRAINT transfers_pkey PRIMARY KEY (id);



ALTER TABLE ONLY public.volume_admin_metadata
    ADD CONSTRAINT volume_admin_metadata_pkey PRIMARY KEY (id);



ALTER TABLE ONLY public.volume_attachment
    ADD CONSTRAINT volume_attachment_pkey PRIMARY KEY (id);



ALTER TABLE ONLY public.volume_glance_metadata
    ADD CONSTRAINT volume_glance_metadata_pkey PRIMARY KEY (id);



ALTER TABLE ONLY public.volume_metadata
    ADD CONSTRAINT volume_metadata_pkey PRIMARY KEY (id);



ALTER TABLE ONLY public.volume_type_extra_specs
    ADD CONSTRAINT volume_type_extra_specs_pkey PRIMARY KEY (id);



ALTER TABLE ONLY public.volume_type_projects
    ADD CONSTRAINT volume_type_projects_pkey PRIMARY KEY (id);



ALTER TABLE ONLY public.volume_type_projects
    ADD CONSTRAINT volume_type_projects_volume_type_id_project_id_deleted_key UNIQUE (volume_type_id, project_id, deleted);



ALTER TABLE ONLY public.volume_types
    ADD CONSTRAINT volume_types_pkey PRIMARY KEY (id);



ALTER TABLE ONLY public.volumes
    ADD CONSTRAINT volumes_pkey PRIMARY KEY (id);



ALTER TABLE ONLY public.workers
    ADD CONSTRAINT workers_pkey PRIMARY KEY (id);



ALTER TABLE ONLY public.workers
    ADD CONSTRAINT workers_resource_type_resource_id_key UNIQUE (resource_type, resource_id);



CREATE INDEX backups_deleted_project_id_idx ON public.backups USING btree (deleted, project_id);



CREATE INDEX group_snapshots_deleted_project_id_idx ON public.group_snapshots USING btree (deleted, project_id);



CREATE INDEX groups_deleted_project_id_idx ON public.groups USING btree (deleted, project_id);



CREATE INDEX ix_attachment_specs_attachment_id ON public.attachment_specs USING btree (attachment_id);



CREATE INDEX ix_backup_metadata_backup_id ON public.backup_metadata USING btree (backup_id);



CREATE INDEX ix_cgsnapshots_consistencygroup_id ON public.cgsnapshots USING btree (consistencygroup_id);



CREATE INDEX ix_default_volume_types_volume_type_id ON public.default_volume_types USING btree (volume_type_id);



CREATE INDEX ix_driver_initiator_data_initiator ON public.driver_initiator_data USING btree (initiator);



CREATE INDEX ix_group_snapshots_group_id ON public.group_snapshots USING btree (group_id);



CREATE INDEX ix_group_type_specs_group_type_id ON public.group_type_specs USING btree (group_type_id);



CREATE INDEX ix_group_volume_type_mapping_group_id ON public.group_volume_type_mapping USING btree (group_id);



CREATE INDEX ix_group_volume_type_mapping_volume_type_id ON public.group_volume_type_mapping USING btree (volume_type_id);



CREATE INDEX ix_image_volume_cache_entries_host ON public.image_volume_cache_entries USING btree (host);



CREATE INDEX ix_image_volume_cache_entries_image_id ON public.image_volume_cache_entries USING btree (image_id);



CREATE INDEX ix_messages_expires_at ON public.messages USING btree (expires_at);



CREATE INDEX ix_quality_of_service_specs_specs_id ON public.quality_of_service_specs USING btree (specs_id);



CREATE INDEX ix_quota_classes_class_name ON public.quota_classes USING btree (class_name);



CREATE INDEX ix_quota_usages_project_id ON public.quota_usages USING btree (project_id);



CREATE INDEX ix_reservations_allocated_id ON public.reservations USING btree (allocated_id);



CREATE INDEX ix_reservations_project_id ON public.reservations USING btree (project_id);



CREATE INDEX ix_reservations_usage_id ON public.reservations USING btree (usage_id);



CREATE INDEX ix_snapshot_metadata_snapshot_id ON public.snapshot_metadata USING btree (snapshot_id);



CREATE INDEX ix_snapshots_cgsnapshot_id ON public.snapshots USING btree (cgsnapshot_id);



CREATE INDEX ix_snapshots_group_snapshot_id ON public.snapshots USING btree (group_snapshot_id);



CREATE INDEX ix_snapshots_volume_id ON public.snapshots USING btree (volume_id);



CREATE INDEX ix_transfers_volume_id ON public.transfers USING btree (volume_id);



CREATE INDEX ix_volume_admin_metadata_volume_id ON public.volume_admin_metadata USING btree (volume_id);



CREATE INDEX ix_volume_attachment_volume_id ON public.volume_attachment USING btree (volume_id);



CREATE INDEX ix_volume_glance_metadata_snapshot_id ON public.volume_glance_metadata USING btree (snapshot_id);



CREATE INDEX ix_volume_glance_metadata_volume_id ON public.volume_glance_metadata USING btree (volume_id);



CREATE INDEX ix_volume_metadata_volume_id ON public.volume_metadata USING btree (volume_id);



CREATE INDEX ix_volume_type_extra_specs_volume_type_id ON public.volume_type_extra_specs USING btree (volume_type_id);



CREATE INDEX ix_volume_types_qos_specs_id ON public.volume_types USING btree (qos_specs_id);



CREATE INDEX ix_volumes_consistencygroup_id ON public.volumes USING btree (consistencygroup_id);



CREATE INDEX ix_volumes_group_id ON public.volumes USING btree (group_id);



CREATE INDEX ix_workers_service_id ON public.workers USING btree (service_id);



CREATE INDEX quota_usage_project_resource_idx ON public.quota_usages USING btree (project_id, resource);



CREATE INDEX reservations_deleted_expire_idx ON public.reservations USING btree (deleted, expire);



CREATE INDEX reservations_deleted_uuid_idx ON public.reservations USING btree (deleted, uuid);



CREATE UNIQUE INDEX services_uuid_idx ON public.services USING btree (uuid);



CREATE INDEX snapshots_deleted_project_id_idx ON public.snapshots USING btree (deleted, project_id);



CREATE INDEX volumes_deleted_host_idx ON public.volumes USING btree (deleted, host);



CREATE INDEX volumes_deleted_project_id_idx ON public.volumes USING btree (deleted, project_id);



CREATE INDEX volumes_service_uuid_idx ON public.volumes USING btree (service_uuid, deleted);



ALTER TABLE ONLY public.attachment_specs
    ADD CONSTRAINT attachment_specs_attachment_id_fkey FOREIGN KEY (attachment_id) REFERENCES public.volume_attachment(id);



ALTER TABLE ONLY public.backup_metadata
    ADD CONSTRAINT backup_metadata_backup_id_fkey FOREIGN KEY (backup_id) REFERENCES public.backups(id);



ALTER TABLE ONLY public.cgsnapshots
    ADD CONSTRAINT cgsnapshots_consistencygroup_id_fkey FOREIGN KEY (consistencygroup_id) REFERENCES public.consistencygroups(id);



ALTER TABLE ONLY public.default_volume_types
    ADD CONSTRAINT default_volume_types_volume_type_id_fkey FOREIGN KEY (volume_type_id) REFERENCES public.volume_types(id);



ALTER TABLE ONLY public.group_snapshots
    ADD CONSTRAINT group_snapshots_group_id_fkey FOREIGN KEY (group_id) REFERENCES public.groups(id);



ALTER TABLE ONLY public.group_type_projects
    ADD CONSTRAINT group_type_projects_group_type_id_fkey FOREIGN KEY (group_type_id) REFERENCES public.group_types(id);



ALTER TABLE ONLY public.group_type_specs
    ADD CONSTRAINT group_type_specs_group_type_id_fkey FOREIGN KEY (group_type_id) REFERENCES public.group_types(id);



ALTER TABLE ONLY public.group_volume_type_mapping
    ADD CONSTRAINT group_volume_type_mapping_group_id_fkey FOREIGN KEY (group_id) REFERENCES public.groups(id);



ALTER TABLE ONLY public.group_volume_type_mapping
    ADD CONSTRAINT group_volume_type_mapping_volume_type_id_fkey FOREIGN KEY (volume_type_id) REFERENCES public.volume_types(id);



ALTER TABLE ONLY public.quality_of_service_specs
    ADD CONSTRAINT quality_of_service_specs_specs_id_fkey FOREIGN KEY (specs_id) REFERENCES public.quality_of_service_specs(id);



ALTER TABLE ONLY public.reservations
    ADD CONSTRAINT reservations_allocated_id_fkey FOREIGN KEY (allocated_id) REFERENCES public.quotas(id);



ALTER TABLE ONLY public.reservations
    ADD CONSTRAINT reservations_usage_id_fkey FOREIGN KEY (usage_id) REFERENCES public.quota_usages(id);



ALTER TABLE ONLY public.snapshot_metadata
    ADD CONSTRAINT snapshot_metadata_snapshot_id_fkey FOREIGN KEY (snapshot_id) REFERENCES public.snapshots(id);



ALTER TABLE ONLY public.snapshots
    ADD CONSTRAINT snapshots_cgsnapshot_id_fkey FOREIGN KEY (cgsnapshot_id) REFERENCES public.cgsnapshots(id);



ALTER TABLE ONLY public.snapshots
    ADD CONSTRAINT snapshots_group_snapshot_id_fkey FOREIGN KEY (group_snapshot_id) REFERENCES public.group_snapshots(id);



ALTER TABLE ONLY public.snapshots
    ADD CONSTRAINT snapshots_volume_id_fkey FOREIGN KEY (volume_id) REFERENCES public.volumes(id);



ALTER TABLE ONLY public.transfers
    ADD CONSTRAINT transfers_volume_id_fkey FOREIGN KEY (volume_id) REFERENCES public.volumes(id);



ALTER TABLE ONLY public.volume_admin_metadata
    ADD CONSTRAINT volume_admin_metadata_volume_id_fkey FOREIGN KEY (volume_id) REFERENCES public.volumes(id);



ALTER TABLE ONLY public.volume_attachment
    ADD CONSTRAINT volume_attachment_volume_id_fkey FOREIGN KEY (volume_id) REFERENCES public.volumes(id);



ALTER TABLE ONLY public.volume_glance_metadata
    ADD CONSTRAINT volume_glance_metadata_snapshot_id_fkey FOREIGN KEY (snapshot_id) REFERENCES public.snapshots(id);



ALTER TABLE ONLY public.volume_glance_metadata
    ADD CONSTRAINT volume_glance_metadata_volume_id_fkey FOREIGN KEY (volume_id) REFERENCES public.volumes(id);



ALTER TABLE ONLY public.volume_metadata
    ADD CONSTRAINT volume_metadata_volume_id_fkey FOREIGN KEY (volume_id) REFERENCES public.volumes(id);



ALTER TABLE ONLY public.volume_type_extra_specs
    ADD CONSTRAINT volume_type_extra_specs_ibfk_1 FOREIGN KEY (volume_type_id) REFERENCES public.volume_types(id);



ALTER TABLE ONLY public.volume_type_projects
    ADD CONSTRAINT volume_type_projects_volume_type_id_fkey FOREIGN KEY (volume_type_id) REFERENCES public.volume_types(id);



ALTER TABLE ONLY public.volume_types
    ADD CONSTRAINT volume_types_qos_specs_id_fkey FOREIGN KEY (qos_specs_id) REFERENCES public.quality_of_service_specs(id);



ALTER TABLE ONLY public.volumes
    ADD CONSTRAINT volumes_consistencygroup_id_fkey FOREIGN KEY (consistencygroup_id) REFERENCES public.consistencygroups(id);



ALTER TABLE ONLY public.volumes
    ADD CONSTRAINT volumes_group_id_fkey FOREIGN KEY (group_id) REFERENCES public.groups(id);



ALTER TABLE ONLY public.volumes
    ADD CONSTRAINT volumes_service_uuid_fkey FOREIGN KEY (service_uuid) REFERENCES public.services(uuid);



ALTER TABLE ONLY public.workers
    ADD CONSTRAINT workers_service_id_fkey FOREIGN KEY (service_id) REFERENCES public.services(id);




