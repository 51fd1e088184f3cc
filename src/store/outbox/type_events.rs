//! Events about volume types, as Cinder's API sends them: `volume_type.*` from its
//! `volumeType` notifier with the type under `volume_types`, and
//! `volume_type_extra_specs.*` from `volumeTypeExtraSpecs` with the type's id and times
//! and the specs set (`specs`) or the key changed (`id`). They concern no volume: the row
//! has no `volume_id` and belongs to the caller's project. Like every event, recorded in
//! the transaction of the change, the payload built by the database from the type's row
//! as the change left it.

use std::sync::LazyLock;

use chrono::{DateTime, Utc};
use uuid::Uuid;

use super::{insert_from_payload, waking, JsonDialect, POSTGRES_JSON, SQLITE_JSON};
use crate::domain::event::EventKind;
use crate::domain::ids::VolumeTypeId;
use crate::store::db::error::StoreError;
use crate::store::db::sql::Sql;
use crate::store::db::{Database, Executor};
use crate::store::{SqlStore, StoreKind};

/// What an extra-spec event names besides the type.
pub(crate) enum SpecsChange<'a> {
    /// The specs set (`POST .../extra_specs`).
    Set(&'a crate::domain::volume_type::ExtraSpecs),
    /// The one key set (`PUT`) or removed (`DELETE .../extra_specs/{key}`).
    Key(&'a str),
}

/// The SQL of each dialect that differs here: a null volume id, booleans as JSON, and a
/// JSON parameter.
struct Spelling {
    null_id: &'static str,
    json_param: &'static str,
    sqlite: bool,
}

const POSTGRES: Spelling = Spelling {
    null_id: "cast(null as uuid)",
    json_param: "cast($9 as json)",
    sqlite: false,
};

const SQLITE: Spelling = Spelling {
    null_id: "null",
    json_param: "json($9)",
    sqlite: true,
};

fn json_bool(s: &Spelling, column: &str) -> String {
    if s.sqlite {
        format!("json(case when {column} then 'true' else 'false' end)")
    } else {
        column.to_owned()
    }
}

/// `$8` the type; the payload `{"volume_types": <the type with its extra specs>}`.
fn insert_type_events(d: &JsonDialect, s: &Spelling) -> String {
    let JsonDialect {
        object,
        object_agg,
        empty_object,
        subquery_open: open,
        subquery_close: close,
        to_text,
        ..
    } = d;
    let (is_public, deleted) = (json_bool(s, "t.is_public"), json_bool(s, "t.deleted"));
    let null_id = s.null_id;
    format!(
        "with p as materialized (\
           select {null_id} as id, coalesce(cast($5 as text), '') as project_id, \
                {object}('volume_types', {object}('id', t.id, 'name', t.name, \
                  'description', t.description, 'is_public', {is_public}, \
                  'qos_specs_id', t.qos_specs_id, 'created_at', t.created_at, \
                  'updated_at', t.updated_at, 'deleted', {deleted}, \
                  'deleted_at', t.deleted_at, \
                  'extra_specs', coalesce({open}select {object_agg}(x.key, x.value) \
                      from volume_type_extra_specs x \
                      where x.volume_type_id = t.id and x.deleted = false{close}, \
                      {empty_object}))){to_text} as payload \
             from volume_types t where t.id = $8) \
         {}",
        insert_from_payload(d)
    )
}

/// `$8` the type, `$9` the specs set (JSON) or null, `$10` the key or null.
fn insert_spec_events(d: &JsonDialect, s: &Spelling) -> String {
    let JsonDialect {
        object, to_text, ..
    } = d;
    let (null_id, specs) = (s.null_id, s.json_param);
    format!(
        "with p as materialized (\
           select {null_id} as id, coalesce(cast($5 as text), '') as project_id, \
                {object}('type_id', t.id, 'specs', {specs}, 'id', cast($10 as text), \
                  'created_at', t.created_at, 'updated_at', t.updated_at, \
                  'deleted_at', t.deleted_at){to_text} as payload \
             from volume_types t where t.id = $8) \
         {}",
        insert_from_payload(d)
    )
}

static TYPE_POSTGRES: LazyLock<String> =
    LazyLock::new(|| insert_type_events(&POSTGRES_JSON, &POSTGRES));
static TYPE_SQLITE: LazyLock<String> = LazyLock::new(|| insert_type_events(&SQLITE_JSON, &SQLITE));
static SPECS_POSTGRES: LazyLock<String> =
    LazyLock::new(|| insert_spec_events(&POSTGRES_JSON, &POSTGRES));
static SPECS_SQLITE: LazyLock<String> = LazyLock::new(|| insert_spec_events(&SQLITE_JSON, &SQLITE));
static TYPE_WAKING: LazyLock<String> = LazyLock::new(|| waking(&TYPE_POSTGRES));
static SPECS_WAKING: LazyLock<String> = LazyLock::new(|| waking(&SPECS_POSTGRES));

impl<D: Database> SqlStore<D> {
    /// Records `kind` (a `volume_type.*` event) about type `id`, in `tx`.
    pub(crate) async fn record_type_event(
        &self,
        tx: &mut D::Tx,
        kind: EventKind,
        id: VolumeTypeId,
        now: DateTime<Utc>,
    ) -> Result<(), StoreError> {
        let text = match D::KIND {
            StoreKind::Postgres => self.while_listening(&TYPE_POSTGRES, &TYPE_WAKING),
            StoreKind::Sqlite => &TYPE_SQLITE,
        };
        if let Some(sql) = self.type_statement(text, kind, id, now) {
            tx.execute(sql).await?;
        }
        Ok(())
    }

    /// Records `kind` (a `volume_type_extra_specs.*` event) about type `id`, in `tx`.
    pub(crate) async fn record_spec_event(
        &self,
        tx: &mut D::Tx,
        kind: EventKind,
        id: VolumeTypeId,
        change: SpecsChange<'_>,
        now: DateTime<Utc>,
    ) -> Result<(), StoreError> {
        let text = match D::KIND {
            StoreKind::Postgres => self.while_listening(&SPECS_POSTGRES, &SPECS_WAKING),
            StoreKind::Sqlite => &SPECS_SQLITE,
        };
        let (specs, key) = match change {
            SpecsChange::Set(specs) => (Some(serde_json::json!(specs).to_string()), None),
            SpecsChange::Key(key) => (None, Some(key.to_owned())),
        };
        if let Some(sql) = self.type_statement(text, kind, id, now) {
            tx.execute(sql.bind(specs).bind(key)).await?;
        }
        Ok(())
    }

    /// `text` bound for one `kind` about type `id` (`$1` to `$8`, as `insert_from_payload`
    /// reads them), published as `<notifier>.<host>`.
    fn type_statement(
        &self,
        text: &'static str,
        kind: EventKind,
        id: VolumeTypeId,
        now: DateTime<Utc>,
    ) -> Option<Sql> {
        if !self.events {
            return None;
        }
        let origin = crate::origin::current();
        let host = origin
            .publisher_id
            .strip_prefix("volume.")
            .unwrap_or(&origin.publisher_id);
        let publisher = format!("{}.{host}", kind.notifier());
        let events = [(Uuid::new_v4(), kind.event_type(), kind.priority())];
        Some(
            Sql::new(text)
                .bind(serde_json::json!(events).to_string())
                .bind(publisher)
                .bind(None::<Uuid>)
                .bind(origin.user_id.clone())
                .bind(origin.project_id.clone())
                .bind(origin.request_id.clone())
                .bind(now)
                .bind(id),
        )
    }
}
