//! Volume type encryption (Cinder's `encryption` table): at most one live row per type,
//! changed only while no live volume has the type. A change locks the type's row; a
//! volume create or retype holds it shared while it decides whether its volume is (still)
//! encrypted, so the two cannot cross.

use std::sync::LazyLock;

use async_trait::async_trait;
use chrono::{DateTime, Utc};
use uuid::Uuid;

use super::db::error::StoreError;
use super::db::row::{Columns, FromRow};
use super::db::sql::Sql;
use super::db::{Database, Executor, Transaction};
use super::{SqlStore, StoreKind};
use crate::domain::encryption::{
    ControlLocation, EncryptionChange, EncryptionSpecs, EncryptionType,
};
use crate::domain::ids::VolumeTypeId;
use crate::domain::refusal::EncryptionRefusal;
use crate::domain::Outcome;

#[async_trait]
pub trait EncryptionStore: Send + Sync {
    /// The live encryption of a type, if it has one.
    async fn get_encryption(
        &self,
        type_id: VolumeTypeId,
    ) -> Result<Option<EncryptionType>, StoreError>;
    /// `Gone` when the type does not exist; refused while live volumes have the type or
    /// when it has encryption already.
    async fn create_encryption(
        &self,
        type_id: VolumeTypeId,
        specs: &EncryptionSpecs,
        now: DateTime<Utc>,
    ) -> Result<Outcome<EncryptionType, EncryptionRefusal>, StoreError>;
    /// `Gone` when the type does not exist; refused while live volumes have the type or
    /// when it has no encryption.
    async fn update_encryption(
        &self,
        type_id: VolumeTypeId,
        change: &EncryptionChange,
        now: DateTime<Utc>,
    ) -> Result<Outcome<(), EncryptionRefusal>, StoreError>;
    /// Refused while live volumes have the type, or when it has no encryption.
    async fn delete_encryption(
        &self,
        type_id: VolumeTypeId,
        now: DateTime<Utc>,
    ) -> Result<Outcome<(), EncryptionRefusal>, StoreError>;
}

const COLUMNS: &str = "encryption_id, volume_type_id, provider, control_location, cipher, \
                       cast(key_size as bigint), created_at, updated_at";

impl FromRow for EncryptionType {
    fn from_row(c: &mut Columns<'_>) -> Result<Self, StoreError> {
        let encryption_id = c.get()?;
        let volume_type_id = c.get()?;
        let provider = c.get()?;
        let location: String = c.get()?;
        let control_location = ControlLocation::parse(&location)
            .ok_or_else(|| StoreError::corrupt(format!("control_location {location:?}")))?;
        Ok(EncryptionType {
            encryption_id,
            volume_type_id,
            specs: EncryptionSpecs {
                provider,
                control_location,
                cipher: c.get()?,
                key_size: c.get()?,
            },
            created_at: c.get()?,
            updated_at: c.get()?,
        })
    }
}

static LIVE_OF_TYPE: LazyLock<String> = LazyLock::new(|| {
    format!("select {COLUMNS} from encryption where volume_type_id = $1 and deleted = false")
});

const LOCK_TYPE: &str = "select id from volume_types where id = $1 and deleted = false";

const TYPE_IN_USE: &str =
    "select count(*) > 0 from volumes where volume_type_id = $1 and deleted = false";

const INSERT: &str = "insert into encryption (encryption_id, volume_type_id, provider, \
                      control_location, cipher, key_size, created_at, deleted) \
                      values ($1, $2, $3, $4, $5, $6, $7, false)";

/// `$2`..`$5` set when their flag (`$6`..`$9`) is true.
const UPDATE: &str = "update encryption set \
       provider = case when $6 then $2 else provider end, \
       control_location = case when $7 then $3 else control_location end, \
       cipher = case when $8 then $4 else cipher end, \
       key_size = case when $9 then $5 else key_size end, \
       updated_at = $10 \
     where volume_type_id = $1 and deleted = false";

const DELETE: &str = "update encryption set deleted = true, deleted_at = $2 \
                      where volume_type_id = $1 and deleted = false";

/// A type's row held shared until the transaction ends (PostgreSQL; SQLite's write
/// transactions exclude each other anyway), so an encryption change, which locks it for
/// update, waits; and the change, once it commits, is seen by the next statement.
const HOLD_TYPES: &str = "select id from volume_types where id in ($1, $2)";

const TYPE_ENCRYPTED: &str = "select count(*) > 0 from encryption \
                              where volume_type_id = $1 and deleted = false";

/// Whether two types' encryption differs, and whether the second is encrypted.
const ENCRYPTION_OF_TYPES: &str = "\
    select (exists (select provider, control_location, cipher, key_size from encryption \
                     where volume_type_id = $1 and deleted = false \
                    except select provider, control_location, cipher, key_size from encryption \
                     where volume_type_id = $2 and deleted = false) \
            or exists (select provider, control_location, cipher, key_size from encryption \
                        where volume_type_id = $2 and deleted = false \
                       except select provider, control_location, cipher, key_size from encryption \
                        where volume_type_id = $1 and deleted = false)), \
           exists (select 1 from encryption where volume_type_id = $2 and deleted = false)";

impl<D: Database> SqlStore<D> {
    async fn hold_types(
        tx: &mut D::Tx,
        first: VolumeTypeId,
        second: VolumeTypeId,
    ) -> Result<Vec<(VolumeTypeId,)>, StoreError> {
        let share = if D::KIND == StoreKind::Postgres {
            " for share"
        } else {
            ""
        };
        tx.fetch_all(Sql::locking(HOLD_TYPES, share).bind(first).bind(second))
            .await
    }

    /// In a volume create: whether its type is encrypted, read once the type's row is
    /// held (`None`: no such type).
    pub(super) async fn hold_type_encryption(
        tx: &mut D::Tx,
        type_id: VolumeTypeId,
    ) -> Result<Option<bool>, StoreError> {
        if Self::hold_types(tx, type_id, type_id).await?.is_empty() {
            return Ok(None);
        }
        let (encrypted,): (bool,) = tx
            .fetch_optional(Sql::new(TYPE_ENCRYPTED).bind(type_id))
            .await?
            .unwrap_or((false,));
        Ok(Some(encrypted))
    }

    /// In a retype: whether the two types' encryption differs and whether the new one is
    /// encrypted, read once both rows are held.
    pub(super) async fn hold_retype_encryption(
        tx: &mut D::Tx,
        old: VolumeTypeId,
        new: VolumeTypeId,
    ) -> Result<(bool, bool), StoreError> {
        Self::hold_types(tx, old, new).await?;
        let read = Sql::new(ENCRYPTION_OF_TYPES).bind(old).bind(new);
        Ok(tx.fetch_optional(read).await?.unwrap_or((false, false)))
    }

    /// A change to type `type_id`'s encryption: the transaction with the type's row
    /// locked (`None`: no such type), refused while live volumes have the type.
    async fn lock_unused_type(
        &self,
        type_id: VolumeTypeId,
    ) -> Result<Option<Result<D::Tx, EncryptionRefusal>>, StoreError> {
        let mut tx = self.db.begin_write().await?;
        let lock = Sql::locking(LOCK_TYPE, D::FOR_UPDATE).bind(type_id);
        let found: Option<(VolumeTypeId,)> = tx.fetch_optional(lock).await?;
        if found.is_none() {
            return Ok(None);
        }
        let (in_use,): (bool,) = tx
            .fetch_optional(Sql::new(TYPE_IN_USE).bind(type_id))
            .await?
            .unwrap_or((false,));
        Ok(Some(if in_use {
            Err(EncryptionRefusal::TypeInUse)
        } else {
            Ok(tx)
        }))
    }
}

#[async_trait]
impl<D: Database> EncryptionStore for SqlStore<D> {
    #[tracing::instrument(skip_all, err)]
    async fn get_encryption(
        &self,
        type_id: VolumeTypeId,
    ) -> Result<Option<EncryptionType>, StoreError> {
        self.db
            .fetch_optional(Sql::new(&LIVE_OF_TYPE).bind(type_id))
            .await
    }

    #[tracing::instrument(skip_all, err)]
    async fn create_encryption(
        &self,
        type_id: VolumeTypeId,
        specs: &EncryptionSpecs,
        now: DateTime<Utc>,
    ) -> Result<Outcome<EncryptionType, EncryptionRefusal>, StoreError> {
        let mut tx = match self.lock_unused_type(type_id).await? {
            None => return Ok(Outcome::Gone),
            Some(Err(refusal)) => return Ok(Outcome::Refused(refusal)),
            Some(Ok(tx)) => tx,
        };
        let existing: Option<EncryptionType> = tx
            .fetch_optional(Sql::new(&LIVE_OF_TYPE).bind(type_id))
            .await?;
        if existing.is_some() {
            return Ok(Outcome::Refused(EncryptionRefusal::Exists));
        }
        let created = EncryptionType {
            encryption_id: Uuid::new_v4(),
            volume_type_id: type_id,
            specs: specs.clone(),
            created_at: now,
            updated_at: None,
        };
        let insert = Sql::new(INSERT)
            .bind(created.encryption_id)
            .bind(type_id)
            .bind(&specs.provider)
            .bind(specs.control_location.as_str())
            .bind(&specs.cipher)
            .bind(specs.key_size)
            .bind(now);
        tx.execute(insert).await?;
        tx.commit().await?;
        Ok(Outcome::Done(created))
    }

    #[tracing::instrument(skip_all, err)]
    async fn update_encryption(
        &self,
        type_id: VolumeTypeId,
        change: &EncryptionChange,
        now: DateTime<Utc>,
    ) -> Result<Outcome<(), EncryptionRefusal>, StoreError> {
        let mut tx = match self.lock_unused_type(type_id).await? {
            None => return Ok(Outcome::Gone),
            Some(Err(refusal)) => return Ok(Outcome::Refused(refusal)),
            Some(Ok(tx)) => tx,
        };
        let update = Sql::new(UPDATE)
            .bind(type_id)
            .bind(change.provider.clone())
            .bind(change.control_location.map(|c| c.as_str()))
            .bind(change.cipher.clone().flatten())
            .bind(change.key_size.flatten())
            .bind(change.provider.is_some())
            .bind(change.control_location.is_some())
            .bind(change.cipher.is_some())
            .bind(change.key_size.is_some())
            .bind(now);
        if tx.execute(update).await? == 0 {
            return Ok(Outcome::Refused(EncryptionRefusal::NotFound));
        }
        tx.commit().await?;
        Ok(Outcome::Done(()))
    }

    #[tracing::instrument(skip_all, err)]
    async fn delete_encryption(
        &self,
        type_id: VolumeTypeId,
        now: DateTime<Utc>,
    ) -> Result<Outcome<(), EncryptionRefusal>, StoreError> {
        let mut tx = match self.lock_unused_type(type_id).await? {
            // No type, so no encryption either.
            None => return Ok(Outcome::Refused(EncryptionRefusal::NotFound)),
            Some(Err(refusal)) => return Ok(Outcome::Refused(refusal)),
            Some(Ok(tx)) => tx,
        };
        if tx.execute(Sql::new(DELETE).bind(type_id).bind(now)).await? == 0 {
            return Ok(Outcome::Refused(EncryptionRefusal::NotFound));
        }
        tx.commit().await?;
        Ok(Outcome::Done(()))
    }
}
