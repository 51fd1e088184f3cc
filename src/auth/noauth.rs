//! Cinder's `noauth`: the token *is* the identity, `user:project`, and everyone is admin.
//!
//! One extension: `user:project:role1,role2` gives exactly those roles (admin only when
//! `admin` is among them), so non-admin behaviour can be exercised without Keystone.
//! Unlike Cinder, a request without a token is refused (401) instead of being handed a
//! token with 204: keystoneauth only retries with credentials after a 401.

use axum::http::HeaderMap;

use super::{header_list, AuthError};
use crate::domain::RequestContext;

pub fn authenticate(headers: &HeaderMap) -> Result<RequestContext, AuthError> {
    let token = headers
        .get("x-auth-token")
        .ok_or(AuthError::MissingCredentials)?
        .to_str()
        .map_err(|_| AuthError::Invalid("The X-Auth-Token header is not valid text.".into()))?
        .trim();
    if token.is_empty() {
        return Err(AuthError::MissingCredentials);
    }
    let mut context = parse_token(token);
    context.service_roles = header_list(headers, "x-service-roles");
    Ok(context)
}

pub(super) fn parse_token(token: &str) -> RequestContext {
    let (user, rest) = token.split_once(':').unwrap_or((token, ""));
    let (project, roles) = match rest.split_once(':') {
        Some((project, roles)) => (project, Some(roles)),
        None => (rest, None),
    };
    let project = if project.is_empty() { user } else { project };
    let roles: Vec<String> = match roles {
        None => vec!["admin".to_owned()],
        Some(list) => list
            .split(',')
            .map(str::trim)
            .filter(|role| !role.is_empty())
            .map(str::to_owned)
            .collect(),
    };
    let is_admin = roles.iter().any(|role| role.eq_ignore_ascii_case("admin"));
    RequestContext {
        user_id: user.to_owned(),
        project_id: project.to_owned(),
        roles,
        service_roles: Vec::new(),
        is_admin,
        auth_token: None,
    }
}

#[cfg(test)]
mod tests {
    use axum::http::HeaderValue;

    use super::*;

    fn context(token: &str) -> RequestContext {
        let mut headers = HeaderMap::new();
        headers.insert("x-auth-token", HeaderValue::from_str(token).unwrap());
        authenticate(&headers).expect("authenticated")
    }

    #[test]
    fn user_and_project() {
        let ctx = context("u1:p1");
        assert_eq!(
            (ctx.user_id.as_str(), ctx.project_id.as_str()),
            ("u1", "p1")
        );
        assert!(ctx.is_admin);
        assert_eq!(ctx.roles, ["admin"]);
    }

    #[test]
    fn no_colon_means_project_equals_user() {
        let ctx = context("abcd");
        assert_eq!(
            (ctx.user_id.as_str(), ctx.project_id.as_str()),
            ("abcd", "abcd")
        );
        let ctx = context("abcd:");
        assert_eq!(ctx.project_id, "abcd");
    }

    #[test]
    fn explicit_roles() {
        let ctx = context("u:p:member,reader");
        assert_eq!(ctx.roles, ["member", "reader"]);
        assert!(!ctx.is_admin);
        assert!(context("u:p:member,admin").is_admin);
        let ctx = context("u:p:");
        assert!(ctx.roles.is_empty() && !ctx.is_admin);
    }

    #[test]
    fn service_roles_come_from_their_header() {
        let mut headers = HeaderMap::new();
        headers.insert("x-auth-token", HeaderValue::from_static("nova:service"));
        headers.insert(
            "x-service-roles",
            HeaderValue::from_static("service, admin"),
        );
        assert_eq!(
            authenticate(&headers).unwrap().service_roles,
            ["service", "admin"]
        );
    }

    #[test]
    fn missing_or_empty_token() {
        assert_eq!(
            authenticate(&HeaderMap::new()),
            Err(AuthError::MissingCredentials)
        );
        let mut headers = HeaderMap::new();
        headers.insert("x-auth-token", HeaderValue::from_static("  "));
        assert_eq!(authenticate(&headers), Err(AuthError::MissingCredentials));
    }
}
