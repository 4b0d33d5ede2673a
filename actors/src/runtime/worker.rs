//! [`Worker`]: one actor that pulls deliveries for its stage and handles them one at a time. A stage runs a
//! pool of them under its [`super::supervisor::StageSupervisor`]; a worker that panics is restarted, and the
//! delivery it held is redelivered because it was dropped without an ack. When the process drains (SIGTERM), a
//! worker finishes the delivery it holds and takes no other.

use std::{sync::Arc, time::Duration};

use ractor::{Actor, ActorProcessingErr, ActorRef};

use super::{NodeContext, handler};
use crate::{bus::WorkQueue, stages::StageLogic};

/// Everything a worker needs; cloned for each (re)started worker.
#[derive(Clone)]
pub struct WorkerArgs {
    pub ctx: Arc<NodeContext>,
    pub logic: Arc<dyn StageLogic>,
    pub queue: Arc<dyn WorkQueue>,
}

pub enum WorkerMsg {
    /// Take the next delivery from the queue.
    Next,
}

pub struct Worker;

impl Actor for Worker {
    type Msg = WorkerMsg;
    type State = WorkerArgs;
    type Arguments = WorkerArgs;

    async fn pre_start(
        &self,
        _myself: ActorRef<WorkerMsg>,
        args: WorkerArgs,
    ) -> Result<WorkerArgs, ActorProcessingErr> {
        Ok(args)
    }

    async fn post_start(&self, myself: ActorRef<WorkerMsg>, _state: &mut WorkerArgs) -> Result<(), ActorProcessingErr> {
        myself.cast(WorkerMsg::Next)?;
        Ok(())
    }

    async fn handle(
        &self,
        myself: ActorRef<WorkerMsg>,
        msg: WorkerMsg,
        state: &mut WorkerArgs,
    ) -> Result<(), ActorProcessingErr> {
        let WorkerMsg::Next = msg;
        let drain = &state.ctx.drain;
        let next = tokio::select! {
            biased;
            _ = drain.stopping.cancelled() => Ok(None),
            next = state.queue.next() => next,
        };
        match next {
            Ok(Some(delivery)) => {
                let _busy = drain.busy();
                // Failures are already logged, counted and handed back to the bus by the handler.
                let _ = handler::process(&state.ctx, &*state.logic, delivery).await;
            }
            Ok(None) => {
                tracing::info!(stage = %state.logic.stage(), "no more work for this worker, stopping");
                myself.stop(None);
                return Ok(());
            }
            Err(e) => {
                tracing::warn!(stage = %state.logic.stage(), error = %e, "cannot take work, retrying");
                tokio::time::sleep(Duration::from_secs(1)).await;
            }
        }
        if drain.stopping.is_cancelled() {
            myself.stop(None);
            return Ok(());
        }
        myself.cast(WorkerMsg::Next)?;
        Ok(())
    }
}
