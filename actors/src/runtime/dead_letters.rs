//! The dead-letter watcher: a work message that failed `max_deliver` times ends its request with an
//! `ErrorResponse`, so no request waits forever on a message nobody will process.

use std::sync::Arc;

use futures::{StreamExt, stream::BoxStream};
use sleuth_messages::{ErrorKind, ErrorResponse};

use super::{Counter, NodeContext, finish::end_with_error};
use crate::bus::DeadLetter;

/// Runs until the bus closes. Spawn it once per process.
pub async fn watch(ctx: Arc<NodeContext>, mut letters: BoxStream<'static, DeadLetter>) -> anyhow::Result<()> {
    while let Some(letter) = letters.next().await {
        tracing::error!(request_id = %letter.request_id, stage = %letter.stage, reason = %letter.reason, "dead letter, ending the request");
        ctx.stats.incr(letter.stage, Counter::DeadLetters);
        let error = ErrorResponse::new(ErrorKind::DeadLetter, format!("{} {}", letter.stage, letter.reason));
        if let Err(e) = end_with_error(&ctx, letter.request_id, error).await {
            tracing::error!(request_id = %letter.request_id, error = format!("{e:#}"), "cannot end dead-lettered request");
        }
    }
    Ok(())
}
