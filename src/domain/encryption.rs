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

/// How qemu-img writes a LUKS volume of a type (Cinder's `decode_cipher`): the type's
/// dm-crypt style cipher `alg-mode-ivgen` with its key size.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct LuksCipher {
    pub alg: String,
    pub mode: String,
    pub ivgen: String,
}

/// The provider names that mean LUKS (Cinder's, including its legacy class paths).
const LUKS_PROVIDERS: &[&str] = &[
    "luks",
    "nova.volume.encryptors.luks.LuksEncryptor",
    "os_brick.encryptors.luks.LuksEncryptor",
];

impl EncryptionSpecs {
    /// The algorithm a key for these specs is made for (Cinder: the cipher up to its
    /// first `-`, `aes` of `aes-xts-plain64`); none without a cipher.
    pub fn key_algorithm(&self) -> Option<&str> {
        let cipher = self.cipher.as_deref()?;
        cipher.split('-').next().filter(|a| !a.is_empty())
    }

    /// The cipher a volume of these specs is written with when the service writes its
    /// data (from an image), or why it cannot be, in Cinder's words.
    pub fn luks_cipher(&self) -> Result<LuksCipher, String> {
        if !LUKS_PROVIDERS.contains(&self.provider.as_str()) {
            return Err(format!("Provider {} not supported.", self.provider));
        }
        let (Some(cipher), Some(key_size)) = (&self.cipher, self.key_size) else {
            return Err(r#"encryption spec must contain "cipher" and "key_size""#.to_owned());
        };
        match cipher.split('-').collect::<Vec<_>>()[..] {
            [alg, mode, ivgen] => Ok(LuksCipher {
                alg: format!("{alg}-{key_size}"),
                mode: mode.to_owned(),
                ivgen: ivgen.to_owned(),
            }),
            _ => Err("Invalid cipher field in encryption type".to_owned()),
        }
    }
}

#[cfg(test)]
mod luks_tests {
    use super::*;

    fn specs(provider: &str, cipher: Option<&str>, key_size: Option<i64>) -> EncryptionSpecs {
        EncryptionSpecs {
            provider: provider.into(),
            control_location: ControlLocation::FrontEnd,
            cipher: cipher.map(str::to_owned),
            key_size,
        }
    }

    #[test]
    fn luks_ciphers_decode_as_cinder_does() {
        let cipher = specs("luks", Some("aes-xts-plain64"), Some(256)).luks_cipher();
        assert_eq!(
            cipher,
            Ok(LuksCipher {
                alg: "aes-256".into(),
                mode: "xts".into(),
                ivgen: "plain64".into()
            })
        );
        let legacy = specs(
            "nova.volume.encryptors.luks.LuksEncryptor",
            Some("aes-xts-plain64"),
            Some(512),
        );
        assert_eq!(legacy.luks_cipher().unwrap().alg, "aes-512");
        assert_eq!(
            specs("plain", Some("aes-xts-plain64"), Some(256)).luks_cipher(),
            Err("Provider plain not supported.".into())
        );
        assert!(specs("luks", None, Some(256)).luks_cipher().is_err());
        assert!(specs("luks", Some("aes-xts"), Some(256))
            .luks_cipher()
            .is_err());
    }
}
