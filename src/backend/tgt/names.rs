//! The names and secrets the tgt backend makes or takes: initiators' iSCSI names, and
//! CHAP accounts.

use super::ACCOUNT_PREFIX;

/// Whether `name` can be an initiator's iSCSI name (RFC 3720's characters, plus '_' that
/// some initiators use). Anything else is refused before it reaches tgtd, whose
/// parameters are `key=value,...`: a ',' or '=' in a name would add parameters of the
/// caller's choosing to an ACL change.
pub(super) fn is_iscsi_name(name: &str) -> bool {
    !name.is_empty()
        && name.len() <= 223
        && name
            .chars()
            .all(|c| c.is_ascii_alphanumeric() || matches!(c, '.' | '-' | ':' | '_'))
}

/// A CHAP account for one volume: a random name (with this driver's prefix) and a
/// random 20-character secret, as Cinder's drivers make them.
pub(super) fn new_credentials() -> (String, String) {
    const ALPHABET: &[u8] = b"abcdefghijkmnopqrstuvwxyzABCDEFGHJKLMNPQRSTUVWXYZ23456789";
    let random = |length: usize| -> String {
        let bytes: Vec<u8> = (0..length.div_ceil(16))
            .flat_map(|_| uuid::Uuid::new_v4().into_bytes())
            .collect();
        bytes
            .iter()
            .take(length)
            .map(|b| ALPHABET[usize::from(*b) % ALPHABET.len()] as char)
            .collect()
    };
    (format!("{ACCOUNT_PREFIX}{}", random(17)), random(20))
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn initiator_names_cannot_smuggle_parameters() {
        assert!(is_iscsi_name("iqn.2004-10.com.ubuntu:01:abc"));
        assert!(is_iscsi_name("eui.02004567A425678D"));
        for bad in [
            "",
            "iqn.a,initiator-address=ALL",
            "iqn.a=b",
            "iqn a",
            "iqn.\u{e9}",
        ] {
            assert!(!is_iscsi_name(bad), "{bad:?}");
        }
        assert!(!is_iscsi_name(&"a".repeat(224)));
    }

    #[test]
    fn credentials_are_random_and_marked() {
        let (user, password) = new_credentials();
        let (other, _) = new_credentials();
        assert!(user.starts_with(ACCOUNT_PREFIX));
        assert_eq!(user.len(), ACCOUNT_PREFIX.len() + 17);
        assert_eq!(password.len(), 20);
        assert!(password.chars().all(|c| c.is_ascii_alphanumeric()));
        assert_ne!(user, other);
    }
}
