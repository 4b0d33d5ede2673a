//! Loop-state reads and compare-and-swaps as the runtime does them: each under a span that records the
//! revision and whether the swap conflicted, so a trace shows every contended write.

use sleuth_messages::LoopState;
use tracing::{Instrument, field::Empty};
use uuid::Uuid;

use super::NodeContext;
use crate::{scoped_span, store::StoreError};

/// The state and its revision, or `None` when the request is unknown or expired.
pub async fn load(ctx: &NodeContext, request_id: Uuid) -> Result<Option<(LoopState, u64)>, StoreError> {
    let span = scoped_span!(
        "kv.get",
        otel.kind = "client",
        db.system.name = store_system(ctx),
        db.operation.name = "get",
        sleuth.kv.revision = Empty,
        sleuth.kv.found = Empty,
    );
    let loaded = ctx.store.load(request_id).instrument(span.clone()).await;
    match &loaded {
        Ok(Some((_, revision))) => {
            span.record("sleuth.kv.revision", revision);
            span.record("sleuth.kv.found", true);
        }
        Ok(None) => {
            span.record("sleuth.kv.found", false);
        }
        Err(e) => crate::telemetry::record_error(&span, e),
    }
    loaded
}

/// Replaces the state if its revision is still `revision`. `Ok(None)` is a conflict: another writer won.
pub async fn compare_and_swap(ctx: &NodeContext, state: &LoopState, revision: u64) -> Result<Option<u64>, StoreError> {
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
