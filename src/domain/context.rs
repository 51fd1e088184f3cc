//! Who is asking: the identity every use case receives.

/// The caller of a request, as the auth strategy established it.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct RequestContext {
    pub user_id: String,
    pub project_id: String,
    pub roles: Vec<String>,
    pub service_roles: Vec<String>,
    /// Cinder's `is_admin`: sees every project by id and passes admin-only rules.
    pub is_admin: bool,
}

impl RequestContext {
    pub fn has_role(&self, role: &str) -> bool {
        self.roles.iter().any(|r| r.eq_ignore_ascii_case(role))
    }

    /// Whether lookups must be limited to the caller's own project (Cinder's "user context").
    pub fn is_project_scoped(&self) -> bool {
        !self.is_admin
    }
}
