use super::*;

/// A file in a directory of its own, removed with it at the end of the test.
struct Written(PathBuf);

impl Drop for Written {
    fn drop(&mut self) {
        if let Some(dir) = self.0.parent() {
            let _ = std::fs::remove_dir_all(dir);
        }
    }
}

impl std::ops::Deref for Written {
    type Target = PathBuf;

    fn deref(&self) -> &PathBuf {
        &self.0
    }
}

fn write(text: &str) -> Written {
    let dir = std::env::temp_dir().join(format!("cinder-attach-conf-{}", uuid::Uuid::new_v4()));
    std::fs::create_dir_all(&dir).expect("temp dir");
    let path = dir.join("cinder.conf");
    std::fs::write(&path, text).expect("written");
    Written(path)
}

fn values(settings: &FileSettings, arg: &str) -> Vec<String> {
    settings
        .get(arg)
        .map(|s| s.values.clone())
        .unwrap_or_default()
}

#[test]
fn cinders_own_options_become_flags() {
    let path = write(
        "# a comment\n[DEFAULT]\nauth_strategy = keystone\nosapi_volume_listen = 0.0.0.0\n\
         osapi_volume_listen_port = 18776\nhost = anchor\ndefault_volume_type = gold\n\
         enabled_backends = fast, slow\ntransport_url = rabbit://x\n\
         [fast]\nvolume_driver = tgt\nvolume_backend_name = fast\nportal = 127.0.0.1:3261\n\
         extra_capabilities = {\"tier\": \"gold\", \"replication\": true}\n\
         [slow]\nvolume_driver = file\nbackend_availability_zone = az2\ndir = /srv/slow\n\
         [database]\nconnection = postgresql+psycopg2://cinder:s3cret@db/cinder\nmax_pool_size = 5\nmax_overflow = 10\n\
         max_retries = -1\nretry_interval = 3\n\
         [keystone_authtoken]\nwww_authenticate_uri = https://keystone:5000\nauth_url = https://keystone:5000/\n\
         username = cinder\npassword = p#ss;word\nproject_name = service\n\
         user_domain_name = Default\nproject_domain_name = Default\nmemcached_servers = m:11211\n\
         certfile = /etc/cinder/client.pem\nkeyfile = /etc/cinder/client.key\n\
         [oslo_policy]\npolicy_file = /etc/cinder/policy.yaml\n",
    );
    let settings = load(&[path.to_path_buf()]).expect("loads");
    assert_eq!(values(&settings, "listen"), ["0.0.0.0:18776"]);
    assert_eq!(values(&settings, "auth_strategy"), ["keystone"]);
    assert_eq!(values(&settings, "host"), ["anchor"]);
    assert_eq!(values(&settings, "default_volume_type"), ["gold"]);
    assert_eq!(
        values(&settings, "backends"),
        [
            "fast=tgt,volume_backend_name=fast,portal=127.0.0.1:3261,\
             capabilities.replication=true,capabilities.tier=gold",
            "slow=file,availability_zone=az2,dir=/srv/slow"
        ]
    );
    assert_eq!(
        values(&settings, "database_url"),
        ["postgres://cinder:s3cret@db/cinder"]
    );
    assert_eq!(values(&settings, "db_max_connections"), ["15"]);
    assert_eq!(values(&settings, "db_max_retries"), ["-1"]);
    assert_eq!(
        values(&settings, "keystone_certfile"),
        ["/etc/cinder/client.pem"]
    );
    assert_eq!(
        values(&settings, "keystone_keyfile"),
        ["/etc/cinder/client.key"]
    );
    assert_eq!(values(&settings, "db_retry_interval"), ["3"]);
    assert_eq!(
        values(&settings, "keystone_url"),
        ["https://keystone:5000/v3"]
    );
    assert_eq!(values(&settings, "keystone_password"), ["p#ss;word"]);
    assert_eq!(
        values(&settings, "policy_file"),
        ["/etc/cinder/policy.yaml"]
    );
    assert_eq!(
        settings.get("listen").map(|s| s.origin.clone()),
        Some(format!(
            "{} [DEFAULT] osapi_volume_listen(_port)",
            path.display()
        ))
    );
    assert_eq!(
        settings.ignored,
        [
            "[DEFAULT] transport_url",
            "[keystone_authtoken] memcached_servers"
        ]
    );
}

#[test]
fn notifications_follow_oslo_messaging_options() {
    let path = write(
        "[DEFAULT]\ntransport_url = rabbit://cinder:pw@mq1:5672,cinder:pw@mq2:5672/\n\
         control_exchange = cinder\n\
         [oslo_messaging_notifications]\ndriver = messagingv2\ntopics = notifications, extra\n\
         [oslo_messaging_rabbit]\namqp_durable_queues = true\n",
    );
    let settings = load(&[path.to_path_buf()]).expect("loads");
    assert_eq!(
        values(&settings, "notify_url"),
        ["amqp://cinder:pw@mq1:5672/%2f amqp://cinder:pw@mq2:5672/%2f"]
    );
    assert_eq!(values(&settings, "notify_topic"), ["notifications"]);
    assert_eq!(values(&settings, "notify_exchange"), ["cinder"]);
    assert_eq!(values(&settings, "notify_durable"), ["true"]);
    // No driver: Cinder sends nothing, and neither do we.
    let quiet = write("[DEFAULT]\ntransport_url = rabbit://mq/\n");
    let settings = load(&[quiet.to_path_buf()]).expect("loads");
    assert!(values(&settings, "notify_url").is_empty());
    // A driver with nowhere to send is a mistake worth stopping for.
    let nowhere = write("[oslo_messaging_notifications]\ndriver = messagingv2\n");
    let err = load(&[nowhere.to_path_buf()]).expect_err("refused");
    assert!(err.to_string().contains("transport_url"), "{err}");
}

#[test]
fn a_later_file_wins_and_relative_policy_files_are_found_beside_it() {
    let first = write("[DEFAULT]\nhost = one\n");
    let second = write("[DEFAULT]\nhost = two\n[oslo_policy]\npolicy_file = policy.yaml\n");
    let beside = second.parent().unwrap().join("policy.yaml");
    std::fs::write(&beside, "{}").unwrap();
    let settings = load(&[first.to_path_buf(), second.to_path_buf()]).expect("loads");
    assert_eq!(values(&settings, "host"), ["two"]);
    assert_eq!(
        values(&settings, "policy_file"),
        [beside.display().to_string()]
    );
}

#[test]
fn database_urls_are_translated() {
    assert_eq!(
        database_url("postgresql://u@h:5432/d?sslmode=require").unwrap(),
        "postgres://u@h:5432/d?sslmode=require"
    );
    assert_eq!(
        database_url("sqlite:///cinder.db").unwrap(),
        "sqlite://cinder.db"
    );
    assert_eq!(
        database_url("sqlite:////var/lib/cinder/cinder.db").unwrap(),
        "sqlite:///var/lib/cinder/cinder.db"
    );
    assert!(database_url("mysql+pymysql://u@h/d")
        .unwrap_err()
        .contains("'mysql'"));
    assert!(database_url("sqlite://").is_err());
}

#[test]
fn bad_values_name_the_file_section_and_option() {
    let cases = [
        ("[DEFAULT]\nosapi_volume_listen_port = http\n", "[DEFAULT] osapi_volume_listen_port: 'http' is not a port number"),
        ("[DEFAULT]\nosapi_volume_listen = localhost\n", "[DEFAULT] osapi_volume_listen: 'localhost' is not an IP address"),
        ("[DEFAULT]\nauth_strategy = ldap\n", "[DEFAULT] auth_strategy: 'ldap' is not one of noauth, keystone"),
        ("[database]\nconnection = mysql://x/y\n", "[database] connection: the 'mysql' database is not supported"),
        ("[DEFAULT]\nenabled_backends = lvm\n", "[DEFAULT] enabled_backends: names the backend 'lvm', but the file has no [lvm] section"),
        ("[DEFAULT]\nenabled_backends = lvm\n[lvm]\nvolume_driver = cinder.volume.drivers.lvm.LVMVolumeDriver\n",
         "[lvm] volume_driver: 'cinder.volume.drivers.lvm.LVMVolumeDriver' (Cinder's LVM driver) has no counterpart here"),
        ("[DEFAULT]\nenabled_backends = lvm\n[lvm]\nvolume_driver = cinder.volume.drivers.lvm.LVMVolumeDriver\n",
         "use volume_driver = tgt with dir ="),
        ("[DEFAULT]\nenabled_backends = nfs\n[nfs]\nvolume_driver = cinder.volume.drivers.nfs.NfsDriver\n",
         "[nfs] volume_driver: 'cinder.volume.drivers.nfs.NfsDriver' is not a driver cinder-attach has (file, iscsi-sim, tgt, rbd or cinder.volume.drivers.rbd.RBDDriver)"),
        ("[database]\nmax_pool_size = many\n", "[database] max_pool_size: 'many' is not a number"),
        ("[DEFAULT]\ntransport_url = rabbit://u:p@mq:5671/\n[oslo_messaging_notifications]\ndriver = messagingv2\n[oslo_messaging_rabbit]\nssl = maybe\n",
         "[oslo_messaging_rabbit] ssl: 'maybe' is not a boolean"),
    ];
    for (text, expected) in cases {
        let path = write(text);
        let err = load(&[path.to_path_buf()]).expect_err(text);
        let shown = err.to_string();
        assert!(
            shown.starts_with(&path.display().to_string()) && shown.contains(expected),
            "{shown}"
        );
    }
}

#[test]
fn oslos_rabbit_tls_options_become_flags() {
    let path = write(
        "[DEFAULT]\ntransport_url = rabbit://u:p@mq:5671/\n\
         [oslo_messaging_notifications]\ndriver = messagingv2\n\
         [oslo_messaging_rabbit]\nssl = true\nssl_ca_file = /etc/rabbit/ca.pem\n\
         kombu_ssl_certfile = /etc/rabbit/client.pem\nssl_key_file = /etc/rabbit/client.key\n",
    );
    let settings = load(&[path.to_path_buf()]).expect("loads");
    assert_eq!(values(&settings, "notify_ssl"), ["true"]);
    assert_eq!(
        values(&settings, "notify_ssl_ca_file"),
        ["/etc/rabbit/ca.pem"]
    );
    assert_eq!(
        values(&settings, "notify_ssl_cert_file"),
        ["/etc/rabbit/client.pem"]
    );
    assert_eq!(
        values(&settings, "notify_ssl_key_file"),
        ["/etc/rabbit/client.key"]
    );
}

#[test]
fn the_key_managers_are_read_fixed_or_barbican() {
    let fixed = write("[key_manager]\nfixed_key = 00ff\n");
    let settings = load(&[fixed.to_path_buf()]).expect("loads");
    assert_eq!(values(&settings, "key_manager_fixed_key"), ["00ff"]);
    let conf = write(
        "[key_manager]\nbackend = cinder.keymgr.conf_key_mgr.ConfKeyManager\nfixed_key = abcd\n",
    );
    let settings = load(&[conf.to_path_buf()]).expect("loads");
    assert_eq!(values(&settings, "key_manager_fixed_key"), ["abcd"]);
    assert_eq!(values(&settings, "key_manager"), ["fixed"]);
    let barbican = write(
        "[key_manager]\nbackend = barbican\nfixed_key = abcd\n\
         [barbican]\nbarbican_endpoint = http://kms:9311\nverify_ssl = false\n",
    );
    let settings = load(&[barbican.to_path_buf()]).expect("loads");
    assert!(values(&settings, "key_manager_fixed_key").is_empty());
    assert_eq!(values(&settings, "key_manager"), ["barbican"]);
    assert_eq!(values(&settings, "barbican_endpoint"), ["http://kms:9311"]);
    assert_eq!(values(&settings, "barbican_insecure"), ["true"]);
    let vault = write("[key_manager]\nbackend = vault\n");
    let err = load(&[vault.to_path_buf()])
        .expect_err("refused")
        .to_string();
    assert!(err.contains("vault"), "{err}");
    assert!(settings
        .ignored
        .contains(&"[key_manager] fixed_key".to_owned()));
    let odd = write("[key_manager]\nfixed_key = abc\n");
    let err = load(&[odd.to_path_buf()]).expect_err("refused").to_string();
    assert!(err.contains("[key_manager] fixed_key"), "{err}");
}

#[test]
fn broken_files_are_refused() {
    let path = write("[DEFAULT\nhost = x\n");
    assert!(load(&[path.to_path_buf()]).is_err());
    let outside = write("host = x\n[DEFAULT]\n");
    let err = load(&[outside.to_path_buf()]).expect_err("outside a section");
    assert!(
        err.to_string()
            .contains("option host is outside any [section]"),
        "{err}"
    );
    let missing = load(&[PathBuf::from("/nonexistent/cinder.conf")]).expect_err("missing");
    assert!(missing.to_string().contains("cannot read it"), "{missing}");
}

#[test]
fn cinders_rbd_section_is_read_as_it_is() {
    let path = write(
        "[DEFAULT]\nenabled_backends = ceph\n\
         [ceph]\nvolume_driver = cinder.volume.drivers.rbd.RBDDriver\nvolume_backend_name = ceph\n\
         rbd_pool = volumes\nrbd_user = cinder\nrbd_ceph_conf = /etc/ceph/ceph.conf\n\
         rbd_keyring_conf = /etc/ceph/ceph.client.cinder.keyring\n\
         rbd_secret_uuid = 457eb676-33da-42ec-9a8c-9293d545c337\nrbd_cluster_name = ceph\n\
         rbd_flatten_volume_from_snapshot = false\nrbd_max_clone_depth = 5\n\
         report_discard_supported = true\n",
    );
    let settings = load(&[path.to_path_buf()]).expect("loads");
    assert_eq!(
        values(&settings, "backends"),
        [
            "ceph=rbd,pool=volumes,user=cinder,conf=/etc/ceph/ceph.conf,\
          keyring=/etc/ceph/ceph.client.cinder.keyring,\
          secret_uuid=457eb676-33da-42ec-9a8c-9293d545c337,cluster_name=ceph,\
          flatten_volume_from_snapshot=false,max_clone_depth=5,report_discard_supported=true,\
          volume_backend_name=ceph"
        ]
    );
    assert!(settings.ignored.is_empty(), "{:?}", settings.ignored);
}

#[test]
fn glance_and_image_options_become_flags() {
    let path = write(
        "[DEFAULT]\nglance_api_servers = old:9292\nglance_request_timeout = 30\n\
         image_conversion_dir = /var/lib/cinder/conversion\nenable_force_upload = True\n\
         glance_api_insecure = false\n\
         glance_catalog_info = image:glance:internalURL\n\
         [glance]\napi_servers = http://g1:9292, https://g2:9292/\nregion_name = RegionTwo\n",
    );
    let settings = load(&[path.to_path_buf()]).expect("loads");
    assert_eq!(
        values(&settings, "glance_api_servers"),
        ["http://g1:9292,https://g2:9292/"],
        "[glance] api_servers wins over the older [DEFAULT] glance_api_servers"
    );
    assert_eq!(values(&settings, "glance_request_timeout"), ["30"]);
    assert_eq!(
        values(&settings, "image_conversion_dir"),
        ["/var/lib/cinder/conversion"]
    );
    assert_eq!(values(&settings, "enable_force_upload"), ["true"]);
    assert_eq!(
        values(&settings, "glance_catalog_info"),
        ["image:glance:internalURL"]
    );
    assert_eq!(values(&settings, "glance_region_name"), ["RegionTwo"]);
    assert!(settings.ignored.is_empty(), "{:?}", settings.ignored);
    let bad = write("[glance]\napi_servers = ,\n");
    let err = load(&[bad.to_path_buf()]).expect_err("refused");
    assert!(err.to_string().contains("no server is named"), "{err}");
}

#[test]
fn backup_drivers_posix_and_ceph_become_flags() {
    let path = write(
        "[DEFAULT]\nbackup_driver = cinder.backup.drivers.ceph.CephBackupDriver\n\
         backup_ceph_conf = /etc/ceph/backup.conf\nbackup_ceph_user = cinder-backup\n\
         backup_ceph_pool = nightly\nbackup_posix_path = /srv/backups\n\
         backup_driver_init_check_interval = 5\n",
    );
    let settings = load(&[path.to_path_buf()]).expect("loads");
    assert_eq!(values(&settings, "backup_driver"), ["ceph"]);
    assert_eq!(
        values(&settings, "backup_ceph_conf"),
        ["/etc/ceph/backup.conf"]
    );
    assert_eq!(values(&settings, "backup_ceph_user"), ["cinder-backup"]);
    assert_eq!(values(&settings, "backup_ceph_pool"), ["nightly"]);
    assert_eq!(values(&settings, "backup_posix_path"), ["/srv/backups"]);
    assert_eq!(
        values(&settings, "backup_driver_init_check_interval"),
        ["5"]
    );
    assert!(settings.ignored.is_empty(), "{:?}", settings.ignored);
    let posix = write("[DEFAULT]\nbackup_driver = cinder.backup.drivers.posix.PosixBackupDriver\n");
    let settings = load(&[posix.to_path_buf()]).expect("loads");
    assert_eq!(values(&settings, "backup_driver"), ["posix"]);
    let swift = write("[DEFAULT]\nbackup_driver = cinder.backup.drivers.swift.SwiftBackupDriver\n");
    let err = load(&[swift.to_path_buf()]).expect_err("refused");
    assert!(
        err.to_string().contains("[DEFAULT] backup_driver: 'cinder.backup.drivers.swift.SwiftBackupDriver' is not built here"),
        "{err}"
    );
}
