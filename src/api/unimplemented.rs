//! Cinder collections this service does not serve: `501 notImplemented`, never a bare 404.

use axum::routing::any;
use axum::Router;

use super::context::Ctx;
use super::endpoint::{Endpoint, UNIMPLEMENTED_COLLECTIONS};
use super::error::ApiError;
use crate::api::AppState;

pub fn router() -> Router<AppState> {
    UNIMPLEMENTED_COLLECTIONS
        .iter()
        .fold(Router::new(), |router, &collection| {
            let endpoint = Endpoint::Unimplemented(collection);
            let handler = move |ctx: Ctx| async move {
                ctx.require(endpoint)?;
                Err::<(), ApiError>(endpoint.not_implemented())
            };
            router
                .route(&format!("/{collection}"), any(handler))
                .route(&format!("/{collection}/{{*rest}}"), any(handler))
        })
}

/// A handler for an operation that is routed (so its microversion gate and name are
/// right) but not built yet: `501 notImplemented`.
pub fn not_built(
    endpoint: Endpoint,
) -> impl Fn(Ctx) -> std::future::Ready<Result<(), ApiError>> + Clone + Send + Sync + 'static {
    move |ctx| std::future::ready(ctx.require(endpoint).and(Err(endpoint.not_implemented())))
}
