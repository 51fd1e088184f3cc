//! Reads a Cinder database for `import-cinder`: the live rows of the tables it takes,
//! read once in one repeatable-read transaction, never written.

use std::collections::BTreeMap;

use chrono::{DateTime, NaiveDateTime, Utc};
use sqlx::postgres::PgRow;
use sqlx::{Connection, PgConnection, Row};

use crate::domain::cinder_import::{
    CinderAttachment, CinderDatabase, CinderQos, CinderSnapshot, CinderType, CinderVolume, Pairs,
};

/// Cinder's URL (`[database] connection` of its cinder.conf, SQLAlchemy's form accepted)
/// as sqlx takes it.
pub fn source_url(url: &str) -> Result<String, String> {
    let (scheme, rest) = url
        .split_once("://")
        .ok_or_else(|| format!("{url:?} is not a database URL"))?;
    match scheme.split('+').next().unwrap_or_default() {
        "postgresql" | "postgres" => Ok(format!("postgresql://{rest}")),
        "mysql" => Err(
            "MySQL databases are not read yet: dump Cinder's database into \
             PostgreSQL (for example with pgloader) and import from there"
                .into(),
        ),
        other => Err(format!(
            "{other:?} databases are not read; give a postgresql:// URL"
        )),
    }
}

const NOT_DELETED: &str = "coalesce(deleted, false) = false";

/// Every live row the import looks at.
pub async fn read(url: &str) -> Result<CinderDatabase, String> {
    let mut conn = PgConnection::connect(&source_url(url)?)
        .await
        .map_err(|e| format!("cannot connect to Cinder's database: {e}"))?;
    let read = read_all(&mut conn).await;
    let _ = conn.close().await;
    read.map_err(|e| format!("cannot read Cinder's database: {e}"))
}

async fn rows(conn: &mut PgConnection, sql: &str) -> Result<Vec<PgRow>, sqlx::Error> {
    sqlx::query(sql).fetch_all(conn).await
}

fn at(row: &PgRow, column: &str) -> Result<DateTime<Utc>, sqlx::Error> {
    let naive: Option<NaiveDateTime> = row.try_get(column)?;
    Ok(naive.map_or_else(Utc::now, |n| n.and_utc()))
}

/// `(owner, key, value)` rows grouped by owner.
async fn pairs(conn: &mut PgConnection, sql: &str) -> Result<BTreeMap<String, Pairs>, sqlx::Error> {
    let mut grouped: BTreeMap<String, Pairs> = BTreeMap::new();
    for row in rows(conn, sql).await? {
        let key: Option<String> = row.try_get(1)?;
        grouped
            .entry(row.try_get(0)?)
            .or_default()
            .insert(key.unwrap_or_default(), row.try_get(2)?);
    }
    Ok(grouped)
}

async fn read_all(conn: &mut PgConnection) -> Result<CinderDatabase, sqlx::Error> {
    sqlx::query("begin transaction isolation level repeatable read read only")
        .execute(&mut *conn)
        .await?;
    let revision: String = sqlx::query_scalar("select version_num from alembic_version")
        .fetch_one(&mut *conn)
        .await?;
    let mut database = CinderDatabase {
        revision,
        ..Default::default()
    };
    read_types(conn, &mut database).await?;
    read_qos(conn, &mut database).await?;
    for (sql, into) in [
        (
            "select project_id, resource, cast(hard_limit as bigint) from quotas \
              where coalesce(deleted, false) = false and project_id is not null \
                and hard_limit is not null order by project_id, resource",
            &mut database.quotas,
        ),
        (
            "select class_name, resource, cast(hard_limit as bigint) from quota_classes \
              where coalesce(deleted, false) = false and class_name is not null \
                and resource is not null and hard_limit is not null \
              order by class_name, resource",
            &mut database.quota_classes,
        ),
    ] {
        for row in rows(conn, sql).await? {
            into.push((row.try_get(0)?, row.try_get(1)?, row.try_get(2)?));
        }
    }
    read_volumes(conn, &mut database).await?;
    read_snapshots(conn, &mut database).await?;
    read_attachments(conn, &mut database).await?;
    sqlx::query("commit").execute(&mut *conn).await?;
    Ok(database)
}

async fn read_types(conn: &mut PgConnection, db: &mut CinderDatabase) -> Result<(), sqlx::Error> {
    let mut specs = pairs(
        conn,
        &format!(
            "select volume_type_id, key, value from volume_type_extra_specs where {NOT_DELETED}"
        ),
    )
    .await?;
    let mut projects: BTreeMap<String, Vec<String>> = BTreeMap::new();
    let sql = "select volume_type_id, project_id from volume_type_projects \
                where coalesce(deleted, 0) = 0 and project_id is not null order by project_id";
    for row in rows(conn, sql).await? {
        projects
            .entry(row.try_get(0)?)
            .or_default()
            .push(row.try_get(1)?);
    }
    let sql = format!("select volume_type_id from encryption where {NOT_DELETED}");
    let encrypted: Vec<String> = rows(conn, &sql)
        .await?
        .iter()
        .map(|r| r.try_get(0))
        .collect::<Result<_, _>>()?;
    let sql = format!(
        "select id, name, description, coalesce(is_public, true) as is_public, qos_specs_id, \
                created_at from volume_types where {NOT_DELETED} order by created_at, id"
    );
    for row in rows(conn, &sql).await? {
        let id: String = row.try_get("id")?;
        db.types.push(CinderType {
            name: row
                .try_get::<Option<String>, _>("name")?
                .unwrap_or_default(),
            description: row.try_get("description")?,
            is_public: row.try_get("is_public")?,
            qos_specs_id: row.try_get("qos_specs_id")?,
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
async fn read_qos(conn: &mut PgConnection, db: &mut CinderDatabase) -> Result<(), sqlx::Error> {
    let sql = format!(
        "select id, specs_id, key, value, created_at from quality_of_service_specs \
          where {NOT_DELETED} order by created_at, id"
    );
    let mut items: BTreeMap<String, BTreeMap<String, String>> = BTreeMap::new();
    let mut heads = Vec::new();
    for row in rows(conn, &sql).await? {
        let parent: Option<String> = row.try_get("specs_id")?;
        let key: Option<String> = row.try_get("key")?;
        let value: Option<String> = row.try_get("value")?;
        match parent {
            Some(parent) => {
                let (key, value) = (key.unwrap_or_default(), value.unwrap_or_default());
                items.entry(parent).or_default().insert(key, value);
            }
            None => heads.push((
                row.try_get::<String, _>("id")?,
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

async fn read_volumes(conn: &mut PgConnection, db: &mut CinderDatabase) -> Result<(), sqlx::Error> {
    let side = |table: &str| {
        format!(
            "select volume_id, key, value from {table} \
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
    for row in rows(conn, &sql).await? {
        let id: String = row.try_get("id")?;
        let size: Option<i32> = row.try_get("size")?;
        db.volumes.push(CinderVolume {
            user_id: row.try_get("user_id")?,
            project_id: row.try_get("project_id")?,
            host: row.try_get("host")?,
            size: i64::from(size.unwrap_or(0)),
            availability_zone: row.try_get("availability_zone")?,
            status: row
                .try_get::<Option<String>, _>("status")?
                .unwrap_or_default(),
            display_name: row.try_get("display_name")?,
            display_description: row.try_get("display_description")?,
            volume_type_id: row.try_get("volume_type_id")?,
            bootable: row.try_get("bootable")?,
            multiattach: row.try_get("multiattach")?,
            encryption_key_id: row.try_get("encryption_key_id")?,
            snapshot_id: row.try_get("snapshot_id")?,
            source_volid: row.try_get("source_volid")?,
            name_id: row.try_get("_name_id")?,
            group_id: row.try_get("group_id")?,
            consistencygroup_id: row.try_get("consistencygroup_id")?,
            migration_status: row.try_get("migration_status")?,
            use_quota: row.try_get("use_quota")?,
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
    conn: &mut PgConnection,
    db: &mut CinderDatabase,
) -> Result<(), sqlx::Error> {
    let sql = format!("select snapshot_id, key, value from snapshot_metadata where {NOT_DELETED}");
    let mut metadata = pairs(conn, &sql).await?;
    let sql = format!(
        "select id, volume_id, user_id, project_id, status, volume_size, display_name, \
                display_description, group_snapshot_id, created_at \
           from snapshots where {NOT_DELETED} order by created_at, id"
    );
    for row in rows(conn, &sql).await? {
        let id: String = row.try_get("id")?;
        let size: Option<i32> = row.try_get("volume_size")?;
        db.snapshots.push(CinderSnapshot {
            volume_id: row.try_get("volume_id")?,
            user_id: row.try_get("user_id")?,
            project_id: row.try_get("project_id")?,
            status: row
                .try_get::<Option<String>, _>("status")?
                .unwrap_or_default(),
            volume_size: i64::from(size.unwrap_or(0)),
            display_name: row.try_get("display_name")?,
            display_description: row.try_get("display_description")?,
            group_snapshot_id: row.try_get("group_snapshot_id")?,
            metadata: metadata.remove(&id).unwrap_or_default(),
            created_at: at(&row, "created_at")?,
            id,
        });
    }
    Ok(())
}

async fn read_attachments(
    conn: &mut PgConnection,
    db: &mut CinderDatabase,
) -> Result<(), sqlx::Error> {
    let sql = format!("select attachment_id, key, value from attachment_specs where {NOT_DELETED}");
    let mut specs = pairs(conn, &sql).await?;
    let sql = format!(
        "select id, volume_id, instance_uuid, attached_host, mountpoint, attach_time, \
                attach_mode, attach_status, connection_info, connector, created_at \
           from volume_attachment where {NOT_DELETED} order by created_at, id"
    );
    for row in rows(conn, &sql).await? {
        let id: String = row.try_get("id")?;
        let attach_time: Option<NaiveDateTime> = row.try_get("attach_time")?;
        db.attachments.push(CinderAttachment {
            volume_id: row.try_get("volume_id")?,
            instance_uuid: row.try_get("instance_uuid")?,
            attached_host: row.try_get("attached_host")?,
            mountpoint: row.try_get("mountpoint")?,
            attach_time: attach_time.map(|t| t.and_utc()),
            attach_mode: row.try_get("attach_mode")?,
            attach_status: row
                .try_get::<Option<String>, _>("attach_status")?
                .unwrap_or_default(),
            connection_info: row.try_get("connection_info")?,
            connector: row.try_get("connector")?,
            specs: specs.remove(&id).unwrap_or_default(),
            created_at: at(&row, "created_at")?,
            id,
        });
    }
    Ok(())
}

#[cfg(test)]
mod tests {
    use super::source_url;

    #[test]
    fn cinder_urls_are_taken_as_sqlx_wants_them() {
        let url = source_url("postgresql+psycopg2://cinder:pw@db:5432/cinder").unwrap();
        assert_eq!(url, "postgresql://cinder:pw@db:5432/cinder");
        assert!(source_url("postgres://x@h/c").is_ok());
        assert!(source_url("mysql+pymysql://cinder@h/cinder")
            .unwrap_err()
            .contains("MySQL"));
        assert!(source_url("sqlite:///x.db").is_err());
        assert!(source_url("cinder").is_err());
    }
}
