//! `trusted-headers`: behind an authenticating proxy (keystonemiddleware or the like),
//! trust the identity headers it sets. Without `X-Identity-Status: Confirmed` and a user,
//! the request is refused.

use axum::http::HeaderMap;

use super::{header_list, AuthError};
use crate::domain::RequestContext;
use crate::policy::{PolicyEngine, Target};

fn header<'a>(headers: &'a HeaderMap, name: &str) -> Option<&'a str> {
    headers
        .get(name)
        .and_then(|v| v.to_str().ok())
        .map(str::trim)
        .filter(|v| !v.is_empty())
}

/// The headers that carry who the caller is. Any of them given twice is refused: the
/// proxy sets each once, so a second copy came from the client, and taking either copy
/// would let the client choose (a `Confirmed` followed by an `Invalid` must not pass).
const IDENTITY_HEADERS: &[&str] = &[
    "x-identity-status",
    "x-user-id",
    "x-project-id",
    "x-roles",
    "x-service-roles",
    "x-user-name",
    "x-project-name",
    "x-user-domain-id",
    "x-project-domain-id",
];

pub fn authenticate(
    headers: &HeaderMap,
    policy: &PolicyEngine,
) -> Result<RequestContext, AuthError> {
    if let Some(name) = IDENTITY_HEADERS
        .iter()
        .find(|name| headers.get_all(**name).iter().nth(1).is_some())
    {
        return Err(AuthError::Invalid(format!(
            "The identity header {name} was given more than once."
        )));
    }
    if !header(headers, "x-identity-status").is_some_and(|s| s.eq_ignore_ascii_case("confirmed")) {
        return Err(AuthError::MissingCredentials);
    }
    let user_id = header(headers, "x-user-id").ok_or(AuthError::MissingCredentials)?;
    let project_id = header(headers, "x-project-id").ok_or(AuthError::MissingCredentials)?;
    Ok(with_admin_flag(
        RequestContext {
            user_id: user_id.to_owned(),
            project_id: project_id.to_owned(),
            roles: header_list(headers, "x-roles"),
            service_roles: header_list(headers, "x-service-roles"),
            is_admin: false,
            auth_token: None,
        },
        policy,
    ))
}

/// Cinder decides `is_admin` with the `context_is_admin` rule.
pub fn with_admin_flag(mut context: RequestContext, policy: &PolicyEngine) -> RequestContext {
    context.is_admin = policy.allows("context_is_admin", &context, &Target::caller(&context));
    context
}

#[cfg(test)]
mod tests {
    use axum::http::HeaderValue;

    use super::*;
    use crate::policy::Policy;

    fn headers(pairs: &[(&'static str, &'static str)]) -> HeaderMap {
        let mut map = HeaderMap::new();
        for (k, v) in pairs {
            map.insert(*k, HeaderValue::from_static(v));
        }
        map
    }

    #[test]
    fn confirmed_identity() {
        let policy = PolicyEngine::new(Policy::with_defaults());
        let ctx = authenticate(
            &headers(&[
                ("x-identity-status", "Confirmed"),
                ("x-user-id", "u1"),
                ("x-project-id", "p1"),
                ("x-roles", "member,reader"),
                ("x-service-roles", "service"),
            ]),
            &policy,
        )
        .unwrap();
        assert_eq!(
            (ctx.user_id.as_str(), ctx.project_id.as_str()),
            ("u1", "p1")
        );
        assert_eq!(ctx.roles, ["member", "reader"]);
        assert_eq!(ctx.service_roles, ["service"]);
        assert!(!ctx.is_admin);
        let admin = authenticate(
            &headers(&[
                ("x-identity-status", "Confirmed"),
                ("x-user-id", "a"),
                ("x-project-id", "p"),
                ("x-roles", "admin"),
            ]),
            &policy,
        )
        .unwrap();
        assert!(admin.is_admin);
    }

    #[test]
    fn unconfirmed_or_incomplete_is_refused() {
        let policy = PolicyEngine::new(Policy::with_defaults());
        for pairs in [
            &[("x-user-id", "u"), ("x-project-id", "p")][..],
            &[
                ("x-identity-status", "Invalid"),
                ("x-user-id", "u"),
                ("x-project-id", "p"),
            ][..],
            &[("x-identity-status", "Confirmed"), ("x-project-id", "p")][..],
        ] {
            assert_eq!(
                authenticate(&headers(pairs), &policy),
                Err(AuthError::MissingCredentials)
            );
        }
    }

    #[test]
    fn an_identity_header_given_twice_is_refused() {
        let policy = PolicyEngine::new(Policy::with_defaults());
        for twice in IDENTITY_HEADERS {
            let mut map = headers(&[
                ("x-identity-status", "Confirmed"),
                ("x-user-id", "u"),
                ("x-project-id", "p"),
                ("x-roles", "admin"),
            ]);
            map.append(*twice, HeaderValue::from_static("one"));
            map.append(*twice, HeaderValue::from_static("Invalid"));
            assert!(
                matches!(authenticate(&map, &policy), Err(AuthError::Invalid(m)) if m.contains(twice)),
                "{twice}"
            );
        }
    }
}
