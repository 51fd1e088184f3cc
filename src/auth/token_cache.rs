//! A bounded map from tokens to what Keystone answered about them, each entry trusted
//! until its own deadline. Valid and invalid answers live in two of these, so a flood of
//! bad tokens can never push good ones out.

use std::collections::HashMap;
use std::sync::Mutex;

use chrono::{DateTime, Utc};

struct Entry<V> {
    value: V,
    valid_until: DateTime<Utc>,
}

pub struct TokenCache<V> {
    entries: Mutex<HashMap<String, Entry<V>>>,
    capacity: usize,
}

impl<V: Clone> TokenCache<V> {
    pub fn new(capacity: usize) -> Self {
        TokenCache {
            entries: Mutex::new(HashMap::new()),
            capacity,
        }
    }

    pub fn get(&self, token: &str, now: DateTime<Utc>) -> Option<V> {
        let entries = self.entries.lock().unwrap_or_else(|e| e.into_inner());
        entries
            .get(token)
            .filter(|e| e.valid_until > now)
            .map(|e| e.value.clone())
    }

    /// Keeps `value` until `valid_until`; when full, expired entries go first, then the
    /// one that would expire soonest.
    pub fn insert(&self, token: &str, value: V, valid_until: DateTime<Utc>, now: DateTime<Utc>) {
        if self.capacity == 0 || valid_until <= now {
            return;
        }
        let mut entries = self.entries.lock().unwrap_or_else(|e| e.into_inner());
        if entries.len() >= self.capacity && !entries.contains_key(token) {
            entries.retain(|_, e| e.valid_until > now);
            if entries.len() >= self.capacity {
                if let Some(soonest) = entries
                    .iter()
                    .min_by_key(|(_, e)| e.valid_until)
                    .map(|(k, _)| k.clone())
                {
                    entries.remove(&soonest);
                }
            }
        }
        entries.insert(token.to_owned(), Entry { value, valid_until });
    }

    #[cfg(test)]
    pub fn len(&self) -> usize {
        self.entries.lock().unwrap_or_else(|e| e.into_inner()).len()
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn bounded_and_expiring() {
        let now = Utc::now();
        let later = |s| now + chrono::Duration::seconds(s);
        let cache = TokenCache::new(2);
        cache.insert("a", 1, later(10), now);
        cache.insert("b", 2, later(20), now);
        cache.insert("c", 3, later(30), now);
        assert_eq!(cache.len(), 2);
        assert_eq!(cache.get("a", now), None, "the soonest to expire went");
        assert_eq!(cache.get("c", now), Some(3));
        assert_eq!(cache.get("b", later(25)), None, "expired");
        cache.insert("d", 4, now, now);
        assert_eq!(cache.get("d", now), None, "already expired: not kept");
        let none = TokenCache::new(0);
        none.insert("a", 1, later(10), now);
        assert_eq!(none.get("a", now), None);
    }
}
