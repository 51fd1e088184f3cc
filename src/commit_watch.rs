//! Whether the current request got as far as committing a change. A request cut off
//! before its first commit changed nothing (its transaction is rolled back when dropped);
//! one cut off after it may have changed the database, and must not be answered as if it
//! had not. The HTTP layer watches each request; the store notes each commit it starts.

use std::future::Future;
use std::sync::atomic::{AtomicBool, Ordering};
use std::sync::Arc;

tokio::task_local! {
    static WATCHED: CommitWatch;
}

/// Set once a commit is started under the request it watches.
#[derive(Clone, Debug, Default)]
pub struct CommitWatch(Arc<AtomicBool>);

impl CommitWatch {
    /// Runs `work` under this watch.
    pub async fn scope<F: Future>(&self, work: F) -> F::Output {
        WATCHED.scope(self.clone(), work).await
    }

    /// Whether a commit was started under this watch (its outcome may be known or not).
    pub fn commit_started(&self) -> bool {
        self.0.load(Ordering::Acquire)
    }
}

/// Called by the store just before it sends a commit: from here on, dropping the
/// request does not undo what the commit stores.
pub fn note_commit() {
    let _ = WATCHED.try_with(|watch| watch.0.store(true, Ordering::Release));
}

#[cfg(test)]
mod tests {
    use super::*;

    #[tokio::test]
    async fn a_watch_sees_the_commits_of_its_own_work_only() {
        let (watched, other) = (CommitWatch::default(), CommitWatch::default());
        watched.scope(async { note_commit() }).await;
        other.scope(async {}).await;
        note_commit(); // outside any watch: no effect, no panic
        assert!(watched.commit_started());
        assert!(!other.commit_started());
    }
}
