//! The listener's accept loop. Each connection is served by hyper (HTTP/1.1) under
//! limits a client cannot get around: a connection must deliver each request's head
//! within the header-read timeout, counted from when the server starts waiting for it
//! (so slow senders and idle keep-alive connections are closed alike), and at most
//! `max_connections` are open at once; past that, new connections wait in the kernel's
//! listen backlog until one closes, and the log says so.

use std::future::Future;
use std::sync::Arc;
use std::time::{Duration, Instant};

use axum::http::Request;
use axum::Router;
use hyper::body::Incoming;
use tower::util::MapRequest;

use crate::api::console::ClientAddr;
use hyper_util::rt::{TokioIo, TokioTimer};
use hyper_util::server::graceful::GracefulShutdown;
use hyper_util::service::TowerToHyperService;
use tokio::net::TcpListener;
use tokio::sync::{OwnedSemaphorePermit, Semaphore};

/// What a connection may cost the server.
#[derive(Debug, Clone, Copy)]
pub struct ConnectionLimits {
    /// Time to deliver a complete request head, from connecting or from the previous
    /// response.
    pub header_read_timeout: Duration,
    /// Connections served at once.
    pub max_connections: usize,
}

/// How often the "limit reached" warning may repeat while the limit holds.
const LIMIT_WARNING_EVERY: Duration = Duration::from_secs(10);

/// Serves connections until `shutdown` completes; then stops accepting and hands back
/// the open connections, to be drained by the caller.
pub async fn accept_until(
    listener: TcpListener,
    app: Router,
    limits: ConnectionLimits,
    shutdown: impl Future<Output = ()>,
) -> GracefulShutdown {
    let graceful = GracefulShutdown::new();
    let permits = Arc::new(Semaphore::new(limits.max_connections.max(1)));
    let mut http = hyper::server::conn::http1::Builder::new();
    http.timer(TokioTimer::new())
        .header_read_timeout(limits.header_read_timeout)
        .keep_alive(true);
    let mut last_warning: Option<Instant> = None;
    tokio::pin!(shutdown);
    loop {
        let permit = tokio::select! {
            permit = next_permit(&permits, limits.max_connections, &mut last_warning) => permit,
            () = &mut shutdown => break,
        };
        let stream = tokio::select! {
            accepted = listener.accept() => match accepted {
                Ok(accepted) => accepted,
                Err(err) => {
                    // Out of file descriptors and the like: wait instead of spinning.
                    tracing::warn!(error = %err, "cannot accept a connection");
                    tokio::time::sleep(Duration::from_millis(200)).await;
                    continue;
                }
            },
            () = &mut shutdown => break,
        };
        let (stream, peer) = stream;
        let _ = stream.set_nodelay(true);
        // The handlers that count per client (the console's sign-in) read the peer.
        let with_peer = MapRequest::new(app.clone(), move |mut request: Request<Incoming>| {
            request.extensions_mut().insert(ClientAddr(peer));
            request
        });
        let service = TowerToHyperService::new(with_peer);
        let connection = graceful.watch(http.serve_connection(TokioIo::new(stream), service));
        tokio::spawn(async move {
            if let Err(err) = connection.await {
                tracing::debug!(error = %err, "connection closed with an error");
            }
            drop(permit);
        });
    }
    graceful
}

/// A place for one more connection, waiting (and saying so) while all are taken.
async fn next_permit(
    permits: &Arc<Semaphore>,
    max_connections: usize,
    last_warning: &mut Option<Instant>,
) -> OwnedSemaphorePermit {
    if let Ok(permit) = permits.clone().try_acquire_owned() {
        return permit;
    }
    if last_warning.is_none_or(|at| at.elapsed() >= LIMIT_WARNING_EVERY) {
        tracing::warn!(
            max_connections,
            "connection limit reached: new connections wait in the listen backlog until one \
             closes (--max-connections)"
        );
        *last_warning = Some(Instant::now());
    }
    permits
        .clone()
        .acquire_owned()
        .await
        .expect("the semaphore is never closed")
}
