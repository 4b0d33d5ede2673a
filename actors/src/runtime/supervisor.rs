//! Supervision: a [`NodeSupervisor`] owns one [`StageSupervisor`] per stage, and each stage supervisor owns a
//! pool of [`Worker`]s. Failed children are restarted and the restarts counted.

use ractor::{Actor, ActorProcessingErr, ActorRef, SupervisionEvent};
use sleuth_messages::Stage;

use super::worker::{Worker, WorkerArgs, WorkerMsg};

#[derive(Clone)]
pub struct StageArgs {
    pub worker: WorkerArgs,
    pub workers: usize,
}

impl StageArgs {
    fn stage(&self) -> Stage {
        self.worker.logic.stage()
    }
}

pub struct StageSupervisor;

pub struct StageState {
    args: StageArgs,
    workers: Vec<ActorRef<WorkerMsg>>,
}

impl Actor for StageSupervisor {
    type Msg = ();
    type State = StageState;
    type Arguments = StageArgs;

    async fn pre_start(&self, myself: ActorRef<()>, args: StageArgs) -> Result<StageState, ActorProcessingErr> {
        let mut workers = Vec::with_capacity(args.workers);
        for _ in 0..args.workers {
            let (worker, _) = Actor::spawn_linked(None, Worker, args.worker.clone(), myself.get_cell()).await?;
            workers.push(worker);
        }
        tracing::info!(stage = %args.stage(), workers = args.workers, "stage started");
        Ok(StageState { args, workers })
    }

    async fn handle_supervisor_evt(
        &self,
        myself: ActorRef<()>,
        event: SupervisionEvent,
        state: &mut StageState,
    ) -> Result<(), ActorProcessingErr> {
        match event {
            SupervisionEvent::ActorFailed(cell, err) => {
                let stage = state.args.stage();
                state.args.worker.ctx.stats.incr(stage, super::Counter::Restarts);
                tracing::error!(stage = %stage, error = %err, "worker failed, restarting it");
                state.workers.retain(|w| w.get_id() != cell.get_id());
                let (worker, _) =
                    Actor::spawn_linked(None, Worker, state.args.worker.clone(), myself.get_cell()).await?;
                state.workers.push(worker);
            }
            SupervisionEvent::ActorTerminated(cell, _, _) => {
                state.workers.retain(|w| w.get_id() != cell.get_id());
            }
            _ => {}
        }
        Ok(())
    }
}

/// The root of a process's actors.
pub struct NodeSupervisor;

pub struct NodeState {
    stages: Vec<(StageArgs, ActorRef<()>)>,
}

impl Actor for NodeSupervisor {
    type Msg = ();
    type State = NodeState;
    type Arguments = Vec<StageArgs>;

    /// Wires the pipeline: one stage supervisor per stage, in the order given (downstream first).
    async fn pre_start(&self, myself: ActorRef<()>, stages: Vec<StageArgs>) -> Result<NodeState, ActorProcessingErr> {
        let mut supervised = Vec::with_capacity(stages.len());
        for args in stages {
            let (sup, _) = Actor::spawn_linked(None, StageSupervisor, args.clone(), myself.get_cell()).await?;
            supervised.push((args, sup));
        }
        Ok(NodeState { stages: supervised })
    }

    async fn handle_supervisor_evt(
        &self,
        myself: ActorRef<()>,
        event: SupervisionEvent,
        state: &mut NodeState,
    ) -> Result<(), ActorProcessingErr> {
        if let SupervisionEvent::ActorFailed(cell, err) = event
            && let Some(i) = state.stages.iter().position(|(_, s)| s.get_id() == cell.get_id())
        {
            let args = state.stages[i].0.clone();
            args.worker.ctx.stats.incr(args.stage(), super::Counter::StageRestarts);
            tracing::error!(stage = %args.stage(), error = %err, "stage supervisor failed, restarting it");
            let (sup, _) = Actor::spawn_linked(None, StageSupervisor, args.clone(), myself.get_cell()).await?;
            state.stages[i] = (args, sup);
        }
        Ok(())
    }
}
