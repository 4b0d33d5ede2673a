//! Supervision: a [`NodeSupervisor`] owns one [`StageSupervisor`] per pool, and each stage supervisor owns a
//! pool of [`Worker`]s (a stage's work queue) or of [`Responder`]s (a request/reply endpoint: intake's `ask`,
//! the graph's lanes). Failed children are restarted and the restarts counted.

use std::sync::Arc;

use ractor::{Actor, ActorCell, ActorProcessingErr, ActorRef, RpcReplyPort, SpawnErr, SupervisionEvent};
use sleuth_messages::Stage;

use super::{
    NodeContext,
    responder::{Responder, ResponderArgs},
    worker::{Worker, WorkerArgs},
};

/// What a pool's actors take their work from.
#[derive(Clone)]
pub enum Pool {
    /// A stage's work queue.
    Work(WorkerArgs),
    /// A request/reply endpoint.
    Respond(ResponderArgs),
}

#[derive(Clone)]
pub struct StageArgs {
    pub pool: Pool,
    pub workers: usize,
}

impl StageArgs {
    fn stage(&self) -> Stage {
        match &self.pool {
            Pool::Work(args) => args.logic.stage(),
            Pool::Respond(args) => args.stage,
        }
    }

    fn ctx(&self) -> &Arc<NodeContext> {
        match &self.pool {
            Pool::Work(args) => &args.ctx,
            Pool::Respond(args) => &args.ctx,
        }
    }

    fn what(&self) -> &'static str {
        match &self.pool {
            Pool::Work(_) => "work queue",
            Pool::Respond(args) => args.name,
        }
    }

    /// Starts one actor of the pool, linked to `supervisor`.
    async fn spawn(&self, supervisor: ActorCell) -> Result<ActorCell, SpawnErr> {
        Ok(match &self.pool {
            Pool::Work(args) => Actor::spawn_linked(None, Worker, args.clone(), supervisor).await?.0.get_cell(),
            Pool::Respond(args) => Actor::spawn_linked(None, Responder, args.clone(), supervisor).await?.0.get_cell(),
        })
    }
}

pub struct StageSupervisor;

pub struct StageState {
    args: StageArgs,
    workers: Vec<ActorCell>,
}

impl Actor for StageSupervisor {
    type Msg = ();
    type State = StageState;
    type Arguments = StageArgs;

    async fn pre_start(&self, myself: ActorRef<()>, args: StageArgs) -> Result<StageState, ActorProcessingErr> {
        let mut workers = Vec::with_capacity(args.workers);
        for _ in 0..args.workers {
            workers.push(args.spawn(myself.get_cell()).await?);
        }
        tracing::info!(stage = %args.stage(), of = args.what(), workers = args.workers, "stage started");
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
                state.args.ctx().stats.incr(stage, super::Counter::Restarts);
                tracing::error!(stage = %stage, of = state.args.what(), error = %err, "worker failed, restarting it");
                state.workers.retain(|w| w.get_id() != cell.get_id());
                let worker = state.args.spawn(myself.get_cell()).await?;
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

/// What a [`NodeSupervisor`] is told after it started.
pub enum NodeMsg {
    /// Supervise these pools too, then reply: a distributed process adds its request/reply endpoints' pools
    /// last, once its work queues are pulled from (`ready.rs`).
    AddPools(Vec<StageArgs>, RpcReplyPort<()>),
}

pub struct NodeState {
    stages: Vec<(StageArgs, ActorRef<()>)>,
}

impl NodeState {
    /// One stage supervisor per pool, in the order given.
    async fn supervise(&mut self, myself: &ActorRef<NodeMsg>, pools: Vec<StageArgs>) -> Result<(), SpawnErr> {
        for args in pools {
            let (sup, _) = Actor::spawn_linked(None, StageSupervisor, args.clone(), myself.get_cell()).await?;
            self.stages.push((args, sup));
        }
        Ok(())
    }
}

impl Actor for NodeSupervisor {
    type Msg = NodeMsg;
    type State = NodeState;
    type Arguments = Vec<StageArgs>;

    /// Wires the pipeline: one stage supervisor per stage, in the order given (downstream first).
    async fn pre_start(
        &self,
        myself: ActorRef<NodeMsg>,
        stages: Vec<StageArgs>,
    ) -> Result<NodeState, ActorProcessingErr> {
        let mut state = NodeState { stages: Vec::with_capacity(stages.len()) };
        state.supervise(&myself, stages).await?;
        Ok(state)
    }

    async fn handle(
        &self,
        myself: ActorRef<NodeMsg>,
        message: NodeMsg,
        state: &mut NodeState,
    ) -> Result<(), ActorProcessingErr> {
        match message {
            NodeMsg::AddPools(pools, reply) => {
                state.supervise(&myself, pools).await?;
                let _ = reply.send(());
            }
        }
        Ok(())
    }

    async fn handle_supervisor_evt(
        &self,
        myself: ActorRef<NodeMsg>,
        event: SupervisionEvent,
        state: &mut NodeState,
    ) -> Result<(), ActorProcessingErr> {
        if let SupervisionEvent::ActorFailed(cell, err) = event
            && let Some(i) = state.stages.iter().position(|(_, s)| s.get_id() == cell.get_id())
        {
            let args = state.stages[i].0.clone();
            args.ctx().stats.incr(args.stage(), super::Counter::StageRestarts);
            tracing::error!(stage = %args.stage(), error = %err, "stage supervisor failed, restarting it");
            let (sup, _) = Actor::spawn_linked(None, StageSupervisor, args.clone(), myself.get_cell()).await?;
            state.stages[i] = (args, sup);
        }
        Ok(())
    }
}
