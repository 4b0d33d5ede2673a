//! Loop-state reads and compare-and-swaps as the runtime does them: each swap under a span that records the
//! revision, whether it conflicted and whether it carried the next work, so a trace shows every contended write.

use std::sync::Arc;

use sleuth_messages::{LoopState, WorkItem};
use tracing::{Instrument, field::Empty};
use uuid::Uuid;

use super::NodeContext;
use crate::{
    scoped_span,
    store::{Committed, StoreError},
    telemetry::TraceHeaders,
};

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
    Ok(commit(ctx, state, revision, None).await?.map(|c| c.revision))
}

/// Replaces the state if its revision is still `revision`, and publishes `work` (with its trace context) in the
/// same write where the store can ([`crate::store::StateStore::commit_with_work`]). `Ok(None)` is a conflict.
pub async fn commit(
    ctx: &NodeContext,
    state: &Arc<LoopState>,
    revision: u64,
    work: Option<(&WorkItem, &TraceHeaders)>,
) -> Result<Option<Committed>, StoreError> {
    let span = scoped_span!(
        "kv.cas",
        otel.kind = "client",
        db.system.name = store_system(ctx),
        db.operation.name = "compare_and_swap",
        sleuth.kv.revision = revision,
        sleuth.kv.new_revision = Empty,
        sleuth.kv.conflict = Empty,
        sleuth.kv.carried_work = Empty,
    );
    let write = async {
        match work.filter(|_| ctx.store.carries_work()) {
            Some((item, trace)) => ctx.store.commit_with_work(state, Some(revision), item, trace).await,
            None => Ok(Committed { revision: ctx.store.compare_and_swap(state, revision).await?, carried: false }),
        }
    };
    match write.instrument(span.clone()).await {
        Ok(committed) => {
            span.record("sleuth.kv.new_revision", committed.revision);
            span.record("sleuth.kv.conflict", false);
            span.record("sleuth.kv.carried_work", committed.carried);
            Ok(Some(committed))
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
    if ctx.config.nats.url.is_some() { "nats_jetstream" } else { "sleuth_in_memory" }
}
