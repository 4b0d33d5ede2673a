//! [`Responder`]: an actor that answers one request/reply endpoint (intake's `ask`, the graph's `search` and
//! `hydrate` lanes) one request at a time. A stage runs a pool of them per endpoint under its
//! [`super::supervisor::StageSupervisor`], like its [`super::worker::Worker`]s: a responder that panics is
//! restarted and counted. The request it held is lost with it (core NATS does not redeliver), so the caller's
//! retry is what recovers it: `sleuth ask` re-sends a question no stage has taken up ([`crate::client`]).

use std::{future::Future, pin::Pin, sync::Arc};

use async_nats::service::{Request, endpoint::Endpoint};
use futures::StreamExt;
use ractor::{Actor, ActorProcessingErr, ActorRef};
use sleuth_messages::Stage;
use tokio::sync::Mutex;

use super::NodeContext;

/// What a responder does with one request: answer it, or hand it on.
pub type Answer = Arc<dyn Fn(Request) -> Pin<Box<dyn Future<Output = ()> + Send>> + Send + Sync>;

/// Everything a responder needs; cloned for each (re)started responder.
#[derive(Clone)]
pub struct ResponderArgs {
    pub ctx: Arc<NodeContext>,
    /// The stage whose service the endpoint belongs to, for the restart counter and the logs.
    pub stage: Stage,
    /// The endpoint's name (`ask`, `search`, `hydrate`).
    pub name: &'static str,
    /// Shared by the pool: each responder takes the next request in turn.
    pub endpoint: Arc<Mutex<Endpoint>>,
    pub answer: Answer,
}

impl ResponderArgs {
    pub fn new<F, Fut>(ctx: Arc<NodeContext>, stage: Stage, name: &'static str, endpoint: Endpoint, answer: F) -> Self
    where
        F: Fn(Request) -> Fut + Send + Sync + 'static,
        Fut: Future<Output = ()> + Send + 'static,
    {
        let answer: Answer = Arc::new(move |request| Box::pin(answer(request)));
        ResponderArgs { ctx, stage, name, endpoint: Arc::new(Mutex::new(endpoint)), answer }
    }
}

pub enum ResponderMsg {
    /// Take the next request from the endpoint.
    Next,
}

pub struct Responder;

impl Actor for Responder {
    type Msg = ResponderMsg;
    type State = ResponderArgs;
    type Arguments = ResponderArgs;

    async fn pre_start(
        &self,
        _myself: ActorRef<ResponderMsg>,
        args: ResponderArgs,
    ) -> Result<ResponderArgs, ActorProcessingErr> {
        Ok(args)
    }

    async fn post_start(
        &self,
        myself: ActorRef<ResponderMsg>,
        _state: &mut ResponderArgs,
    ) -> Result<(), ActorProcessingErr> {
        myself.cast(ResponderMsg::Next)?;
        Ok(())
    }

    async fn handle(
        &self,
        myself: ActorRef<ResponderMsg>,
        msg: ResponderMsg,
        state: &mut ResponderArgs,
    ) -> Result<(), ActorProcessingErr> {
        let ResponderMsg::Next = msg;
        let drain = &state.ctx.drain;
        // Only the wait for a request holds the endpoint; answering it does not, so the pool answers in parallel.
        let next = tokio::select! {
            biased;
            _ = drain.stopping.cancelled() => None,
            next = async { state.endpoint.lock().await.next().await } => next,
        };
        let Some(request) = next else {
            tracing::info!(stage = %state.stage, endpoint = state.name, "endpoint closed, stopping");
            myself.stop(None);
            return Ok(());
        };
        let inboxes = &state.ctx.config.nats.inbox_prefixes;
        match request.message.reply.as_deref() {
            Some(reply) if !crate::nats_client::is_inbox(reply, inboxes) => {
                // Answering would publish under this stage's user to a subject the requester chose.
                tracing::warn!(stage = %state.stage, endpoint = state.name, reply, allowed = ?inboxes, "request dropped: its reply subject is not an inbox (nats.inbox_prefixes)");
            }
            _ => {
                let _busy = drain.busy();
                (state.answer)(request).await;
            }
        }
        if drain.stopping.is_cancelled() {
            myself.stop(None);
            return Ok(());
        }
        myself.cast(ResponderMsg::Next)?;
        Ok(())
    }
}
