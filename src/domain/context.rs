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
    /// The caller's token, passed on to the services called on its behalf (Glance,
    /// Barbican), as Cinder does.
    pub auth_token: Option<String>,
}

impl RequestContext {
    pub fn has_role(&self, role: &str) -> bool {
        self.roles.iter().any(|r| r.eq_ignore_ascii_case(role))
    }

    /// The project a listing covers, by Cinder's rule: one's own, unless an admin asks for
    /// `all_tenants` (then `requested`, or every project when that is `None`).
    pub fn listing_project(&self, all_tenants: bool, requested: Option<String>) -> Option<String> {
        if self.is_admin && all_tenants {
            requested
        } else {
            Some(self.project_id.clone())
        }
    }

    /// Whether lookups must be limited to the caller's own project (Cinder's "user context").
    pub fn is_project_scoped(&self) -> bool {
        !self.is_admin
    }
}
