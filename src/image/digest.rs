//! Checks an image's data against the hash Glance recorded when it was uploaded: its
//! multihash (`os_hash_algo`/`os_hash_value`) when it has one, else the md5 `checksum`.
//! An image with neither is taken as it is, as Cinder does.

use md5::{Digest, Md5};
use ring::digest;

use super::ImageInfo;

#[allow(clippy::large_enum_variant)] // one per download, never moved about
enum Hasher {
    Ring(digest::Context),
    Md5(Md5),
    Nothing,
}

/// The running hash of an image's data, and the value it must end at.
pub struct Verifier {
    hasher: Hasher,
    algorithm: &'static str,
    expected: String,
}

impl Verifier {
    /// The check the image's record calls for; an algorithm we do not know is an error.
    pub fn for_image(image: &ImageInfo) -> Result<Verifier, String> {
        if let (Some(algo), Some(value)) = (&image.os_hash_algo, &image.os_hash_value) {
            let (algorithm, name) = match algo.as_str() {
                "sha512" => (&digest::SHA512, "sha512"),
                "sha384" => (&digest::SHA384, "sha384"),
                "sha256" => (&digest::SHA256, "sha256"),
                "sha1" => (&digest::SHA1_FOR_LEGACY_USE_ONLY, "sha1"),
                "md5" => {
                    return Ok(Verifier {
                        hasher: Hasher::Md5(Md5::default()),
                        algorithm: "md5",
                        expected: value.to_ascii_lowercase(),
                    })
                }
                other => {
                    return Err(format!(
                        "the image's hash algorithm {other} is not supported"
                    ))
                }
            };
            return Ok(Verifier {
                hasher: Hasher::Ring(digest::Context::new(algorithm)),
                algorithm: name,
                expected: value.to_ascii_lowercase(),
            });
        }
        Ok(match &image.checksum {
            Some(checksum) => Verifier {
                hasher: Hasher::Md5(Md5::default()),
                algorithm: "md5",
                expected: checksum.to_ascii_lowercase(),
            },
            None => Verifier {
                hasher: Hasher::Nothing,
                algorithm: "none",
                expected: String::new(),
            },
        })
    }

    pub fn update(&mut self, data: &[u8]) {
        match &mut self.hasher {
            Hasher::Ring(context) => context.update(data),
            Hasher::Md5(md5) => md5.update(data),
            Hasher::Nothing => {}
        }
    }

    /// Whether the data seen matches; the error says what was expected and found.
    pub fn finish(self) -> Result<(), String> {
        let found = match self.hasher {
            Hasher::Ring(context) => hex(context.finish().as_ref()),
            Hasher::Md5(md5) => hex(&md5.finalize()),
            Hasher::Nothing => return Ok(()),
        };
        if found == self.expected {
            Ok(())
        } else {
            let short = |h: &str| h.chars().take(16).collect::<String>();
            Err(format!(
                "the image's data does not match its {} checksum (expected {}..., got {}...)",
                self.algorithm,
                short(&self.expected),
                short(&found)
            ))
        }
    }
}

fn hex(bytes: &[u8]) -> String {
    bytes.iter().map(|b| format!("{b:02x}")).collect()
}

#[cfg(test)]
mod tests {
    use super::*;
    use std::collections::BTreeMap;

    fn image(algo: Option<&str>, value: Option<&str>, checksum: Option<&str>) -> ImageInfo {
        ImageInfo {
            id: "i".into(),
            name: None,
            status: "active".into(),
            size: Some(3),
            virtual_size: None,
            min_disk: 0,
            min_ram: 0,
            disk_format: Some("raw".into()),
            container_format: Some("bare".into()),
            checksum: checksum.map(str::to_owned),
            os_hash_algo: algo.map(str::to_owned),
            os_hash_value: value.map(str::to_owned),
            properties: BTreeMap::new(),
            locations: Vec::new(),
        }
    }

    const ABC_MD5: &str = "900150983cd24fb0d6963f7d28e17f72";
    const ABC_SHA512: &str = "ddaf35a193617abacc417349ae20413112e6fa4e89a97ea20a9eeee64b55d39a\
2192992a274fc1a836ba3c23a3feebbd454d4423643ce80e2a9ac94fa54ca49f";

    #[test]
    fn the_multihash_is_checked_first() {
        let mut v =
            Verifier::for_image(&image(Some("sha512"), Some(ABC_SHA512), Some("x"))).unwrap();
        v.update(b"a");
        v.update(b"bc");
        v.finish().unwrap();
        let mut v = Verifier::for_image(&image(Some("sha512"), Some(ABC_SHA512), None)).unwrap();
        v.update(b"abd");
        let err = v.finish().unwrap_err();
        assert!(err.contains("does not match its sha512 checksum"), "{err}");
    }

    #[test]
    fn md5_without_a_multihash_and_nothing_without_either() {
        let mut v = Verifier::for_image(&image(None, None, Some(ABC_MD5))).unwrap();
        v.update(b"abc");
        v.finish().unwrap();
        let mut v = Verifier::for_image(&image(None, None, None)).unwrap();
        v.update(b"anything");
        v.finish().unwrap();
        assert!(Verifier::for_image(&image(Some("whirlpool"), Some("00"), None)).is_err());
    }
}
