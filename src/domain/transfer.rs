//! Volume transfers: a project offers one of its `available` volumes (it becomes
//! `awaiting-transfer`); another project takes it with the offer's key. Only a salted
//! hash of the key is kept, as Cinder keeps it (HMAC-SHA1 of the key under the salt), so
//! the key is shown once, at creation.

use chrono::{DateTime, Utc};
use ring::hmac;
use ring::rand::{SecureRandom, SystemRandom};

use super::ids::{TransferId, VolumeId};

/// Cinder's `volume_transfer_salt_length` and `volume_transfer_key_length`.
const SALT_CHARS: usize = 8;
const KEY_CHARS: usize = 16;

#[derive(Debug, Clone, PartialEq)]
pub struct Transfer {
    pub id: TransferId,
    pub volume_id: VolumeId,
    pub name: Option<String>,
    pub no_snapshots: bool,
    pub source_project_id: String,
    pub destination_project_id: Option<String>,
    pub accepted: bool,
    pub created_at: DateTime<Utc>,
}

/// A transfer about to be recorded, with the key to give its creator.
#[derive(Debug, Clone)]
pub struct NewTransfer {
    pub transfer: Transfer,
    pub auth_key: String,
    pub salt: String,
    pub crypt_hash: String,
}

impl NewTransfer {
    pub fn offer(
        volume_id: VolumeId,
        name: Option<String>,
        no_snapshots: bool,
        source_project_id: String,
        now: DateTime<Utc>,
    ) -> Result<NewTransfer, String> {
        let salt = random_hex(SALT_CHARS)?;
        let auth_key = random_hex(KEY_CHARS)?;
        let crypt_hash = crypt_hash(&salt, &auth_key);
        Ok(NewTransfer {
            transfer: Transfer {
                id: TransferId::generate(),
                volume_id,
                name,
                no_snapshots,
                source_project_id,
                destination_project_id: None,
                accepted: false,
                created_at: now,
            },
            auth_key,
            salt,
            crypt_hash,
        })
    }
}

/// `hex(HMAC-SHA1(key = salt, message = auth_key))`, Cinder's `_get_crypt_hash`.
pub fn crypt_hash(salt: &str, auth_key: &str) -> String {
    let key = hmac::Key::new(hmac::HMAC_SHA1_FOR_LEGACY_USE_ONLY, salt.as_bytes());
    hex(hmac::sign(&key, auth_key.as_bytes()).as_ref())
}

/// Whether `auth_key` opens a transfer whose salt and hash are these (compared in
/// constant time).
pub fn key_opens(salt: &str, crypt_hash_hex: &str, auth_key: &str) -> bool {
    let key = hmac::Key::new(hmac::HMAC_SHA1_FOR_LEGACY_USE_ONLY, salt.as_bytes());
    let Some(expected) = unhex(crypt_hash_hex) else {
        return false;
    };
    hmac::verify(&key, auth_key.as_bytes(), &expected).is_ok()
}

fn random_hex(chars: usize) -> Result<String, String> {
    let mut bytes = vec![0u8; chars.div_ceil(2)];
    SystemRandom::new()
        .fill(&mut bytes)
        .map_err(|_| "the system's random source failed".to_owned())?;
    let mut text = hex(&bytes);
    text.truncate(chars);
    Ok(text)
}

fn hex(bytes: &[u8]) -> String {
    bytes.iter().map(|b| format!("{b:02x}")).collect()
}

fn unhex(text: &str) -> Option<Vec<u8>> {
    if !text.len().is_multiple_of(2) {
        return None;
    }
    (0..text.len())
        .step_by(2)
        .map(|i| u8::from_str_radix(text.get(i..i + 2)?, 16).ok())
        .collect()
}

/// What a transfer list filters on (Cinder's `transfer_get_all` filters).
#[derive(Debug, Clone, Default)]
pub struct TransferFilters {
    /// `None`: every project's (admins with `all_tenants`).
    pub project_id: Option<String>,
    pub volume_id: Option<VolumeId>,
    pub name: Option<String>,
}

/// The keys a transfer list sorts by (3.57+); `created_at, id` ascending before.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum TransferSortKey {
    Id,
    Name,
    VolumeId,
    CreatedAt,
}

impl TransferSortKey {
    pub fn parse(name: &str) -> Option<Self> {
        Some(match name {
            "id" => TransferSortKey::Id,
            "name" | "display_name" => TransferSortKey::Name,
            "volume_id" => TransferSortKey::VolumeId,
            "created_at" => TransferSortKey::CreatedAt,
            _ => return None,
        })
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn keys_hash_as_cinder_does() {
        // hmac.new(b"0123abcd", b"fedcba9876543210", hashlib.sha1).hexdigest()
        // Python: hmac.new(b"0123abcd", b"fedcba9876543210", hashlib.sha1).hexdigest()
        assert_eq!(
            crypt_hash("0123abcd", "fedcba9876543210"),
            "86d6da8da125d9d0c9497919e99943455a0b1652"
        );
        let offer = NewTransfer::offer(
            VolumeId::generate(),
            None,
            false,
            "p1".to_owned(),
            Utc::now(),
        )
        .unwrap();
        assert_eq!(offer.salt.len(), 8);
        assert_eq!(offer.auth_key.len(), 16);
        assert!(key_opens(&offer.salt, &offer.crypt_hash, &offer.auth_key));
        assert!(!key_opens(&offer.salt, &offer.crypt_hash, "wrong"));
        assert!(!key_opens(&offer.salt, "not hex", &offer.auth_key));
    }
}
