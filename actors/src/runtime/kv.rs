//! Loop-state reads and compare-and-swaps as the runtime does them: each swap under a span that records the
//! revision and whether it conflicted, so a trace shows every contended write.

use std::sync::Arc;

use sleuth_messages::LoopState;
use tracing::{Instrument, field::Empty};
use uuid::Uuid;

use super::NodeContext;
use crate::{scoped_span, store::StoreError};

/// The state and its revision, or `None` when the request is unknown or expired. Not a span of its own (every
/// hop starts with one; the hop's span and the `kv.cas` after it say what it read).
pub async fn load(ctx: &NodeContext, request_id: Uuid) -> Result<Option<(Arc<LoopState>, u64)>, StoreError> {
    ctx.store.load(request_id).await
}

/// Replaces the state if its revision is still `revision`. `Ok(None)` is a conflict: another writer won.
pub async fn compare_and_swap(
    ctx: &NodeContext,
    state: &Arc<LoopState>,
    revision: u64,
) -> Result<Option<u64>, StoreError> {
    let span = scoped_span!(
        "kv.cas",
        otel.kind = "client",
        db.system.name = store_system(ctx),
        db.operation.name = "compare_and_swap",
        sleuth.kv.revision = revision,
        sleuth.kv.new_revision = Empty,
        sleuth.kv.conflict = Empty,
    );
    match ctx.store.compare_and_swap(state, revision).instrument(span.clone()).await {
        Ok(new) => {
            span.record("sleuth.kv.new_revision", new);
            span.record("sleuth.kv.conflict", false);
            Ok(Some(new))
        }
        Err(StoreError::Conflict) => {
            span.record("sleuth.kv.conflict", true);
            Ok(None)
        }
        Err(e) => {
            crate::telemetry::record_error(&span, &e);
            Err(e)
        }
    }
}

fn store_system(ctx: &NodeContext) -> &'static str {
    if ctx.config.nats.url.is_some() { "nats_kv" } else { "sleuth_in_memory" }
}
