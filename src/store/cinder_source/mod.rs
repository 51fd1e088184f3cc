//! Reads a Cinder database for `import-cinder`: the live rows of the tables it takes,
//! read once in one repeatable-read transaction, never written, from PostgreSQL or MySQL
//! (`connection.rs`). A `key` column is named through its table, as MySQL reserves the word.

use std::collections::BTreeMap;

use chrono::{DateTime, NaiveDateTime, Utc};

use crate::domain::cinder_import::{
    CinderAttachment, CinderDatabase, CinderQos, CinderSnapshot, CinderType, CinderVolume, Pairs,
};

mod connection;

pub use connection::source_url;
use connection::{SourceConnection, SourceRow};

const NOT_DELETED: &str = "coalesce(deleted, false) = false";

/// Every live row the import looks at.
pub async fn read(url: &str) -> Result<CinderDatabase, String> {
    let mut conn = SourceConnection::connect(url).await?;
    let read = read_all(&mut conn).await;
    conn.close().await;
    read.map_err(|e| format!("cannot read Cinder's database: {e}"))
}

fn at(row: &SourceRow, column: &str) -> Result<DateTime<Utc>, sqlx::Error> {
    let naive: Option<NaiveDateTime> = row.get(column)?;
    Ok(naive.map_or_else(Utc::now, |n| n.and_utc()))
}

/// `(owner, key, value)` rows grouped by owner.
async fn pairs(
    conn: &mut SourceConnection,
    sql: &str,
) -> Result<BTreeMap<String, Pairs>, sqlx::Error> {
    let mut grouped: BTreeMap<String, Pairs> = BTreeMap::new();
    for row in conn.rows(sql).await? {
        let key: Option<String> = row.get(1)?;
        grouped
            .entry(row.get(0)?)
            .or_default()
            .insert(key.unwrap_or_default(), row.get(2)?);
    }
    Ok(grouped)
}

async fn read_all(conn: &mut SourceConnection) -> Result<CinderDatabase, sqlx::Error> {
    conn.begin_snapshot().await?;
    let version = conn.rows("select version_num from alembic_version").await?;
    let revision = match version.first() {
        Some(row) => row.get(0)?,
        None => return Err(sqlx::Error::RowNotFound),
    };
    let mut database = CinderDatabase {
        revision,
        ..Default::default()
    };
    read_types(conn, &mut database).await?;
    read_qos(conn, &mut database).await?;
    for (sql, into) in [
        (
            "select project_id, resource, hard_limit from quotas \
              where coalesce(deleted, false) = false and project_id is not null \
                and hard_limit is not null order by project_id, resource",
            &mut database.quotas,
        ),
        (
            "select class_name, resource, hard_limit from quota_classes \
              where coalesce(deleted, false) = false and class_name is not null \
                and resource is not null and hard_limit is not null \
              order by class_name, resource",
            &mut database.quota_classes,
        ),
    ] {
        for row in conn.rows(sql).await? {
            let limit: i32 = row.get(2)?; // Cinder's column is an INTEGER on both
            into.push((row.get(0)?, row.get(1)?, i64::from(limit)));
        }
    }
    read_volumes(conn, &mut database).await?;
    read_snapshots(conn, &mut database).await?;
    read_attachments(conn, &mut database).await?;
    conn.end_snapshot().await?;
    Ok(database)
}

async fn read_types(
    conn: &mut SourceConnection,
    db: &mut CinderDatabase,
) -> Result<(), sqlx::Error> {
    let mut specs = pairs(
        conn,
        &format!(
            "select s.volume_type_id, s.key, s.value from volume_type_extra_specs s where {NOT_DELETED}"
        ),
    )
    .await?;
    let mut projects: BTreeMap<String, Vec<String>> = BTreeMap::new();
    let sql = "select volume_type_id, project_id from volume_type_projects \
                where coalesce(deleted, 0) = 0 and project_id is not null order by project_id";
    for row in conn.rows(sql).await? {
        projects.entry(row.get(0)?).or_default().push(row.get(1)?);
    }
    let sql = format!("select volume_type_id from encryption where {NOT_DELETED}");
    let encrypted: Vec<String> = conn
        .rows(&sql)
        .await?
        .iter()
        .map(|r| r.get(0))
        .collect::<Result<_, _>>()?;
    let sql = format!(
        "select id, name, description, coalesce(is_public, true) as is_public, qos_specs_id, \
                created_at from volume_types where {NOT_DELETED} order by created_at, id"
    );
    for row in conn.rows(&sql).await? {
        let id: String = row.get("id")?;
        db.types.push(CinderType {
            name: row.get::<Option<String>, _>("name")?.unwrap_or_default(),
            description: row.get("description")?,
            is_public: row.get("is_public")?,
            qos_specs_id: row.get("qos_specs_id")?,
            specs: specs.remove(&id).unwrap_or_default(),
            projects: projects.remove(&id).unwrap_or_default(),
            encrypted: encrypted.contains(&id),
            created_at: at(&row, "created_at")?,
            id,
        });
    }
    Ok(())
}

/// Cinder keeps a QoS spec as one row naming it (`QoS_Specs_Name`) and one row per key
/// pointing at it (`specs_id`), `consumer` among them.
async fn read_qos(conn: &mut SourceConnection, db: &mut CinderDatabase) -> Result<(), sqlx::Error> {
    let sql = format!(
        "select q.id, q.specs_id, q.key, q.value, q.created_at from quality_of_service_specs q \
          where {NOT_DELETED} order by created_at, id"
    );
    let mut items: BTreeMap<String, BTreeMap<String, String>> = BTreeMap::new();
    let mut heads = Vec::new();
    for row in conn.rows(&sql).await? {
        let parent: Option<String> = row.get("specs_id")?;
        let key: Option<String> = row.get("key")?;
        let value: Option<String> = row.get("value")?;
        match parent {
            Some(parent) => {
                let (key, value) = (key.unwrap_or_default(), value.unwrap_or_default());
                items.entry(parent).or_default().insert(key, value);
            }
            None => heads.push((
                row.get::<String, _>("id")?,
                value.unwrap_or_default(),
                at(&row, "created_at")?,
            )),
        }
    }
    for (id, name, created_at) in heads {
        let mut specs = items.remove(&id).unwrap_or_default();
        db.qos.push(CinderQos {
            consumer: specs.remove("consumer"),
            id,
            name,
            specs,
            created_at,
        });
    }
    Ok(())
}

async fn read_volumes(
    conn: &mut SourceConnection,
    db: &mut CinderDatabase,
) -> Result<(), sqlx::Error> {
    let side = |table: &str| {
        format!(
            "select m.volume_id, m.key, m.value from {table} m \
              where {NOT_DELETED} and volume_id is not null"
        )
    };
    let mut metadata = pairs(conn, &side("volume_metadata")).await?;
    let mut admin = pairs(conn, &side("volume_admin_metadata")).await?;
    let mut image = pairs(conn, &side("volume_glance_metadata")).await?;
    let sql = format!(
        "select id, user_id, project_id, host, size, availability_zone, status, display_name, \
                display_description, volume_type_id, coalesce(bootable, false) as bootable, \
                coalesce(multiattach, false) as multiattach, encryption_key_id, snapshot_id, \
                source_volid, _name_id, group_id, consistencygroup_id, migration_status, \
                use_quota, created_at \
           from volumes where {NOT_DELETED} order by created_at, id"
    );
    for row in conn.rows(&sql).await? {
        let id: String = row.get("id")?;
        let size: Option<i32> = row.get("size")?;
        db.volumes.push(CinderVolume {
            user_id: row.get("user_id")?,
            project_id: row.get("project_id")?,
            host: row.get("host")?,
            size: i64::from(size.unwrap_or(0)),
            availability_zone: row.get("availability_zone")?,
            status: row.get::<Option<String>, _>("status")?.unwrap_or_default(),
            display_name: row.get("display_name")?,
            display_description: row.get("display_description")?,
            volume_type_id: row.get("volume_type_id")?,
            bootable: row.get("bootable")?,
            multiattach: row.get("multiattach")?,
            encryption_key_id: row.get("encryption_key_id")?,
            snapshot_id: row.get("snapshot_id")?,
            source_volid: row.get("source_volid")?,
            name_id: row.get("_name_id")?,
            group_id: row.get("group_id")?,
            consistencygroup_id: row.get("consistencygroup_id")?,
            migration_status: row.get("migration_status")?,
            use_quota: row.get("use_quota")?,
            metadata: metadata.remove(&id).unwrap_or_default(),
            admin_metadata: admin.remove(&id).unwrap_or_default(),
            image_metadata: image.remove(&id).unwrap_or_default(),
            created_at: at(&row, "created_at")?,
            id,
        });
    }
    Ok(())
}

async fn read_snapshots(
    conn: &mut SourceConnection,
    db: &mut CinderDatabase,
) -> Result<(), sqlx::Error> {
    let sql = format!(
        "select m.snapshot_id, m.key, m.value from snapshot_metadata m where {NOT_DELETED}"
    );
    let mut metadata = pairs(conn, &sql).await?;
    let sql = format!(
        "select id, volume_id, user_id, project_id, status, volume_size, display_name, \
                display_description, group_snapshot_id, created_at \
           from snapshots where {NOT_DELETED} order by created_at, id"
    );
    for row in conn.rows(&sql).await? {
        let id: String = row.get("id")?;
        let size: Option<i32> = row.get("volume_size")?;
        db.snapshots.push(CinderSnapshot {
            volume_id: row.get("volume_id")?,
            user_id: row.get("user_id")?,
            project_id: row.get("project_id")?,
            status: row.get::<Option<String>, _>("status")?.unwrap_or_default(),
            volume_size: i64::from(size.unwrap_or(0)),
            display_name: row.get("display_name")?,
            display_description: row.get("display_description")?,
            group_snapshot_id: row.get("group_snapshot_id")?,
            metadata: metadata.remove(&id).unwrap_or_default(),
            created_at: at(&row, "created_at")?,
            id,
        });
    }
    Ok(())
}

async fn read_attachments(
    conn: &mut SourceConnection,
    db: &mut CinderDatabase,
) -> Result<(), sqlx::Error> {
    let sql = format!(
        "select s.attachment_id, s.key, s.value from attachment_specs s where {NOT_DELETED}"
    );
    let mut specs = pairs(conn, &sql).await?;
    let sql = format!(
        "select id, volume_id, instance_uuid, attached_host, mountpoint, attach_time, \
                attach_mode, attach_status, connection_info, connector, created_at \
           from volume_attachment where {NOT_DELETED} order by created_at, id"
    );
    for row in conn.rows(&sql).await? {
        let id: String = row.get("id")?;
        let attach_time: Option<NaiveDateTime> = row.get("attach_time")?;
        db.attachments.push(CinderAttachment {
            volume_id: row.get("volume_id")?,
            instance_uuid: row.get("instance_uuid")?,
            attached_host: row.get("attached_host")?,
            mountpoint: row.get("mountpoint")?,
            attach_time: attach_time.map(|t| t.and_utc()),
            attach_mode: row.get("attach_mode")?,
            attach_status: row
                .get::<Option<String>, _>("attach_status")?
                .unwrap_or_default(),
            connection_info: row.get("connection_info")?,
            connector: row.get("connector")?,
            specs: specs.remove(&id).unwrap_or_default(),
            created_at: at(&row, "created_at")?,
            id,
        });
    }
    Ok(())
}
