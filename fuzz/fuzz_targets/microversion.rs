//! The `OpenStack-API-Version` header: any text is either refused or negotiates a
//! version inside the supported range; it never panics.
#![no_main]

use cinder_attach::api::microversion::{negotiate, ApiVersion};
use libfuzzer_sys::fuzz_target;

fuzz_target!(|data: &[u8]| {
    let Ok(header) = std::str::from_utf8(data) else {
        return;
    };
    if let Ok(version) = negotiate(Some(header)) {
        assert!(version >= ApiVersion::MIN && version <= ApiVersion::MAX);
    }
});
