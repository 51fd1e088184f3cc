//! Volume encryption (Cinder's volume type encryption): a volume type may say how the
//! hosts of its volumes encrypt them (a provider such as `luks`, a cipher and key size,
//! and where it happens: `front-end`, the hypervisor, or `back-end`). The data path is the
//! host's; the service keeps the specs, gives each volume of an encrypted type a key id
//! from the key manager, and tells hosts both (`GET /volumes/{id}/encryption`,
//! `connection_info.encrypted`). While live volumes use a type, its encryption is frozen.

use chrono::{DateTime, Utc};
use uuid::Uuid;

use super::ids::VolumeTypeId;
use super::string_enum::string_enum;

string_enum!(
    /// Where a volume is encrypted.
    ControlLocation {
        FrontEnd => "front-end",
        BackEnd => "back-end",
    }
);

/// The encryption a type asks for.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct EncryptionSpecs {
    pub provider: String,
    pub control_location: ControlLocation,
    pub cipher: Option<String>,
    pub key_size: Option<i64>,
}

/// A change to a type's encryption: only the fields given change (`Some(None)`: set to
/// null).
#[derive(Debug, Clone, Default, PartialEq, Eq)]
pub struct EncryptionChange {
    pub provider: Option<String>,
    pub control_location: Option<ControlLocation>,
    pub cipher: Option<Option<String>>,
    pub key_size: Option<Option<i64>>,
}

/// A type's encryption as stored (Cinder's `encryption` row).
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct EncryptionType {
    pub encryption_id: Uuid,
    pub volume_type_id: VolumeTypeId,
    pub specs: EncryptionSpecs,
    pub created_at: DateTime<Utc>,
    pub updated_at: Option<DateTime<Utc>>,
}

/// The key id a volume of an encrypted type gets, from the configured key manager.
#[derive(Debug, Clone, Default, PartialEq, Eq)]
pub enum KeyManager {
    /// None configured: volumes of encrypted types cannot be created.
    #[default]
    None,
    /// Cinder's `ConfKeyManager` (`[key_manager] fixed_key`): every volume's key is the one
    /// fixed key, whose id is all zeros.
    FixedKey,
}

/// The id Cinder's `ConfKeyManager` gives its fixed key.
pub const FIXED_KEY_ID: &str = "00000000-0000-0000-0000-000000000000";

impl KeyManager {
    /// The key id for a new volume of an encrypted type, or `None` when no key manager
    /// can give one.
    pub fn new_key_id(&self) -> Option<String> {
        match self {
            KeyManager::None => None,
            KeyManager::FixedKey => Some(FIXED_KEY_ID.to_owned()),
        }
    }
}
