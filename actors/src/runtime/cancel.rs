//! Cancellation. Publishing on `sleuth.v1.cancel.<request_id>` reaches every process: each tries to end the
//! request with the reason `cancelled` (compare-and-swap lets exactly one succeed and send the one final reply),
//! then drops whatever work it holds for that request, so no in-flight LLM, graph or search call finishes and
//! nothing more is published for it. Cancelling an unknown or finished request does nothing, and so does a
//! tenant's cancellation of a request another tenant owns.

use std::{
    collections::HashMap,
    sync::{Arc, Mutex},
};

use futures::{StreamExt, stream::BoxStream};
use sleuth_messages::{Principal, TerminationReason};
use tokio_util::sync::CancellationToken;
use uuid::Uuid;

use super::{NodeContext, finish};
use crate::bus::Cancel;

/// The work in flight in this process, by request.
#[derive(Debug, Default)]
pub struct Cancellations {
    inflight: Mutex<HashMap<Uuid, (usize, CancellationToken)>>,
}

/// Holds a request's token while one delivery works on it.
pub struct InFlight {
    registry: Arc<Cancellations>,
    request_id: Uuid,
    token: CancellationToken,
}

impl InFlight {
    pub fn token(&self) -> &CancellationToken {
        &self.token
    }
}

impl Drop for InFlight {
    fn drop(&mut self) {
        let mut inflight = self.registry.inflight.lock().unwrap_or_else(|e| e.into_inner());
        if let Some((count, _)) = inflight.get_mut(&self.request_id) {
            *count -= 1;
            if *count == 0 {
                inflight.remove(&self.request_id);
            }
        }
    }
}

impl Cancellations {
    /// Registers one delivery of `request_id`; parallel deliveries of the same request share a token.
    pub fn register(self: &Arc<Self>, request_id: Uuid) -> InFlight {
        let mut inflight = self.inflight.lock().unwrap_or_else(|e| e.into_inner());
        let (count, token) = inflight.entry(request_id).or_insert_with(|| (0, CancellationToken::new()));
        *count += 1;
        InFlight { registry: self.clone(), request_id, token: token.clone() }
    }

    /// Drops this process's work for `request_id`. True if there was any.
    pub fn cancel(&self, request_id: Uuid) -> bool {
        let inflight = self.inflight.lock().unwrap_or_else(|e| e.into_inner());
        match inflight.get(&request_id) {
            Some((_, token)) => {
                token.cancel();
                true
            }
            None => false,
        }
    }
}

/// Ends the request (if it is still running) and drops this process's work for it. True if this call ended it.
/// A tenant's cancellation (`by`) of a request that is not its own does nothing.
pub async fn cancel(ctx: &NodeContext, request_id: Uuid, by: Option<&Principal>) -> anyhow::Result<bool> {
    if by.is_some() {
        let owner = ctx.store.load(request_id).await?.and_then(|(state, _)| state.owner.clone());
        if !Principal::may_act_on(by, owner.as_ref()) {
            tracing::warn!(request_id = %request_id, by = ?by, "cancellation refused: the request is not the tenant's");
            return Ok(false);
        }
    }
    // The end is committed first, so a delivery whose work is dropped reloads a finished state.
    let ended = finish::end_now(ctx, request_id, TerminationReason::Cancelled, "cancel", None).await;
    let dropped = ctx.cancels.cancel(request_id);
    tracing::info!(request_id = %request_id, ended = ended.as_ref().ok().copied(), dropped, "cancellation received");
    ended
}

/// Follows the deployment's cancellations until the bus closes. Spawn it once per process.
pub async fn listen(ctx: Arc<NodeContext>, mut cancels: BoxStream<'static, Cancel>) -> anyhow::Result<()> {
    while let Some(Cancel { request_id, by }) = cancels.next().await {
        let ctx = ctx.clone();
        tokio::spawn(async move {
            if let Err(e) = cancel(&ctx, request_id, by.as_ref()).await {
                tracing::warn!(request_id = %request_id, error = format!("{e:#}"), "cannot cancel the request");
            }
        });
    }
    Ok(())
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn a_cancel_reaches_every_delivery_of_the_request_and_no_other() {
        let registry = Arc::new(Cancellations::default());
        let (a, b) = (Uuid::now_v7(), Uuid::now_v7());
        let first = registry.register(a);
        let second = registry.register(a);
        let other = registry.register(b);
        assert!(registry.cancel(a));
        assert!(first.token().is_cancelled() && second.token().is_cancelled());
        assert!(!other.token().is_cancelled());
        drop((first, second));
        assert!(!registry.cancel(a), "nothing in flight once both deliveries are done");
    }
}
