//! Where encrypted volumes' keys come from: the key manager (Cinder's castellan). With
//! `fixed`, Cinder's ConfKeyManager, every volume shares one configured key; with
//! `barbican`, each volume gets its own secret in Barbican, made, copied and deleted with
//! the caller's token as Cinder does, so the key belongs to the volume's project.

pub mod barbican;

use std::sync::Arc;

pub use barbican::Barbican;

/// The id Cinder's `ConfKeyManager` gives its fixed key.
pub const FIXED_KEY_ID: &str = "00000000-0000-0000-0000-000000000000";

/// The key id a volume's or backup's details show (3.64+): none for the fixed key, whose
/// id says nothing, as Cinder's views leave it out.
pub fn shown_key_id(key_id: Option<&str>) -> Option<&str> {
    key_id.filter(|id| *id != FIXED_KEY_ID)
}

#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
pub enum KeyError {
    #[error("the key {0} could not be found")]
    NotFound(String),
    /// The key manager refused the call: its status and what it said.
    #[error("the key manager refused the request ({0}): {1}")]
    Refused(u16, String),
    #[error("the key manager is unavailable: {0}")]
    Unavailable(String),
    #[error("no key manager is configured")]
    NoKeyManager,
}

/// The configured key manager.
#[derive(Debug, Clone, Default)]
pub enum KeyManager {
    /// None configured: volumes of encrypted types cannot be created.
    #[default]
    None,
    /// Cinder's `ConfKeyManager` (`[key_manager] fixed_key`): every volume's key is the one
    /// fixed key (hex, as configured), whose id is all zeros.
    Fixed(String),
    /// Castellan's Barbican key manager: a secret per volume.
    Barbican(Arc<Barbican>),
}

impl KeyManager {
    /// The fixed-key manager, its key checked as Cinder reads it (`unhexlify`).
    pub fn fixed(hex: &str) -> Result<KeyManager, String> {
        let hex = hex.trim();
        if hex.is_empty()
            || !hex.len().is_multiple_of(2)
            || !hex.chars().all(|c| c.is_ascii_hexdigit())
        {
            return Err(
                "[key_manager] fixed_key must be a key in hexadecimal (an even number of 0-9, a-f)"
                    .to_owned(),
            );
        }
        Ok(KeyManager::Fixed(hex.to_ascii_lowercase()))
    }

    pub fn is_configured(&self) -> bool {
        !matches!(self, KeyManager::None)
    }

    /// A new key for a volume, of the type's algorithm (`aes` of `aes-xts-plain64`) and
    /// size in bits.
    pub async fn create_key(
        &self,
        token: Option<&str>,
        algorithm: &str,
        bits: Option<i64>,
    ) -> Result<String, KeyError> {
        match self {
            KeyManager::None => Err(KeyError::NoKeyManager),
            KeyManager::Fixed(_) => Ok(FIXED_KEY_ID.to_owned()),
            KeyManager::Barbican(barbican) => barbican.create_key(token, algorithm, bits).await,
        }
    }

    /// A key of its own holding the same bytes as `key_id` (Cinder's
    /// `clone_encryption_key`: a volume's key goes when the volume goes, so a clone, an
    /// uploaded image or a volume from either never shares it).
    pub async fn clone_key(&self, token: Option<&str>, key_id: &str) -> Result<String, KeyError> {
        match self {
            KeyManager::None => Err(KeyError::NoKeyManager),
            KeyManager::Fixed(_) if key_id == FIXED_KEY_ID => Ok(FIXED_KEY_ID.to_owned()),
            KeyManager::Fixed(_) => Err(KeyError::NotFound(key_id.to_owned())),
            KeyManager::Barbican(barbican) => barbican.clone_key(token, key_id).await,
        }
    }

    /// Whether keys belong to projects and must move with a transferred volume (Cinder's
    /// `key_transfer`): Barbican's do; the fixed key is everyone's.
    pub fn keys_have_owners(&self) -> bool {
        matches!(self, KeyManager::Barbican(_))
    }

    /// The service's own token, holding keys of volumes on offer.
    pub async fn own_token(&self) -> Result<String, KeyError> {
        match self {
            KeyManager::Barbican(barbican) => barbican.own_token().await,
            _ => Err(KeyError::NoKeyManager),
        }
    }

    /// A copy of `key_id`, read with `from` and made with `to`, so it belongs to `to`'s
    /// project.
    pub async fn copy_key_between(
        &self,
        from: &str,
        to: &str,
        key_id: &str,
    ) -> Result<String, KeyError> {
        match self {
            KeyManager::Barbican(barbican) => {
                let secret = barbican.get(Some(from), key_id).await?;
                barbican.store(Some(to), &secret).await
            }
            _ => self.clone_key(Some(to), key_id).await,
        }
    }

    /// The LUKS passphrase of key `key_id` as Cinder and os-brick derive it: the key's
    /// bytes in lowercase hexadecimal.
    pub async fn passphrase(&self, token: Option<&str>, key_id: &str) -> Result<String, KeyError> {
        match self {
            KeyManager::None => Err(KeyError::NoKeyManager),
            KeyManager::Fixed(hex) if key_id == FIXED_KEY_ID => Ok(hex.clone()),
            KeyManager::Fixed(_) => Err(KeyError::NotFound(key_id.to_owned())),
            KeyManager::Barbican(barbican) => {
                let secret = barbican.get(token, key_id).await?;
                Ok(hex(&secret.payload))
            }
        }
    }

    /// Deletes a volume's key; one already gone is fine. The fixed key is never deleted
    /// (ConfKeyManager only logs that it keeps it).
    pub async fn delete_key(&self, token: Option<&str>, key_id: &str) -> Result<(), KeyError> {
        match self {
            KeyManager::None | KeyManager::Fixed(_) => Ok(()),
            KeyManager::Barbican(barbican) => match barbican.delete(token, key_id).await {
                Ok(()) | Err(KeyError::NotFound(_)) => Ok(()),
                Err(err) => Err(err),
            },
        }
    }
}

fn hex(bytes: &[u8]) -> String {
    bytes.iter().map(|b| format!("{b:02x}")).collect()
}

#[cfg(test)]
mod tests {
    use super::*;

    #[tokio::test]
    async fn the_fixed_key_is_read_as_cinder_reads_it() {
        let manager = KeyManager::fixed("00FF10").unwrap();
        assert_eq!(
            manager.passphrase(None, FIXED_KEY_ID).await.unwrap(),
            "00ff10"
        );
        assert!(manager.passphrase(None, "other").await.is_err());
        assert_eq!(
            manager.create_key(None, "aes", Some(256)).await.unwrap(),
            FIXED_KEY_ID
        );
        assert_eq!(
            manager.clone_key(None, FIXED_KEY_ID).await.unwrap(),
            FIXED_KEY_ID
        );
        assert_eq!(manager.delete_key(None, FIXED_KEY_ID).await, Ok(()));
        for bad in ["", "abc", "zz", "  "] {
            assert!(KeyManager::fixed(bad).is_err(), "{bad:?}");
        }
    }

    #[test]
    fn passphrases_are_lowercase_hex() {
        assert_eq!(hex(&[0, 0xab, 0x10]), "00ab10");
    }
}
