//! Listing parameters shared by every collection: sort keys, marker, limit, offset.

/// Cinder's `osapi_max_limit`: the most items one page returns.
pub const MAX_LIMIT: i64 = 1000;

#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum SortDir {
    Asc,
    Desc,
}

/// One page of a listing, sorted by whitelisted keys (the store maps keys to columns).
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Page<K> {
    pub sort: Vec<(K, SortDir)>,
    pub marker: Option<uuid::Uuid>,
    pub limit: i64,
    pub offset: i64,
}
