//! Who the current task works for: the request and caller that events record
//! (`domain::event::Origin`). The HTTP layer sets it for each request; work a request
//! hands to another task carries it along with `spawn`; background work (recovery,
//! heartbeats) runs under the process's own origin.

use std::future::Future;
use std::sync::OnceLock;

use crate::domain::event::Origin;

tokio::task_local! {
    static CURRENT: Origin;
}

static PUBLISHER: OnceLock<String> = OnceLock::new();

/// Names this process as Cinder's notifier does: `volume.<host>`. Set once at start-up.
pub fn set_publisher(host: &str) {
    let _ = PUBLISHER.set(format!("volume.{host}"));
}

/// `volume.<host>` of this process.
pub fn publisher() -> String {
    PUBLISHER
        .get()
        .cloned()
        .unwrap_or_else(|| "volume.localhost".to_owned())
}

/// The origin of the current task, or the process's own when no request set one.
pub fn current() -> Origin {
    CURRENT.try_with(Origin::clone).unwrap_or_else(|_| Origin {
        publisher_id: publisher(),
        ..Origin::default()
    })
}

/// Runs `work` on behalf of `origin`.
pub async fn scope<F: Future>(origin: Origin, work: F) -> F::Output {
    CURRENT.scope(origin, work).await
}

/// `tokio::spawn`, keeping the current origin for the spawned work.
pub fn spawn<F>(work: F) -> tokio::task::JoinHandle<F::Output>
where
    F: Future + Send + 'static,
    F::Output: Send + 'static,
{
    let origin = current();
    tokio::spawn(CURRENT.scope(origin, work))
}
