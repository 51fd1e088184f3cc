//! Policy files: any text is either refused with a line number or gives a policy whose
//! rules evaluate (boundedly) for a caller; it never panics or hangs.
#![no_main]

use cinder_attach::domain::RequestContext;
use cinder_attach::policy::{Policy, Target};
use libfuzzer_sys::fuzz_target;

fuzz_target!(|data: &[u8]| {
    let Ok(text) = std::str::from_utf8(data) else {
        return;
    };
    let Ok(policy) = Policy::from_text("fuzz.yaml", text) else {
        return;
    };
    let caller = RequestContext {
        user_id: "u".into(),
        project_id: "p".into(),
        roles: vec!["member".into(), "reader".into()],
        service_roles: vec![],
        is_admin: false,
        auth_token: None,
    };
    let names: Vec<String> = policy.rule_names().map(str::to_owned).collect();
    for name in names {
        policy.allows(&name, &caller, &Target::project("p"));
    }
    let _ = policy.render();
});
