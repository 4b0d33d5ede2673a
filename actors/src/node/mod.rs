//! [`Node`]: one process's running stages, wired to a bus and a state store. `Node::embedded` is the
//! single-process default; `Node::distributed` attaches the chosen stages to NATS JetStream.

pub mod endpoint;
pub mod ready;
pub mod startup;

use std::{
    sync::{
        Arc,
        atomic::{AtomicBool, Ordering},
    },
    time::Duration,
};

use anyhow::Context;
use futures::StreamExt;
use ractor::{Actor, ActorRef, ActorStatus};
use sleuth_messages::{AskReply, AskRequest, ErrorKind, ErrorResponse, Event, EventBody, Outcome, Stage};
use tokio::task::JoinHandle;

use crate::{
    bench::null_work::NullWork,
    bus::{Bus, WorkQueue, memory::MemoryBus, nats::NatsBus},
    config::Config,
    entity_types::{EntityTypes, KnownTypes},
    graph::{self, GraphStore},
    llm::{LlmAgent, LlmClient},
    retrieval::{Retriever, cache::RetrievalCache},
    runtime::{
        Cancellations, NodeContext, Stats, cancel, dead_letters, intake,
        supervisor::{NodeMsg, NodeSupervisor, Pool, StageArgs},
        watchdog,
        worker::WorkerArgs,
    },
    stages::{
        StageLogic, grader::Grader, graph::GraphStage, llm_grader::LlmGrader, llm_planner::LlmPlanner,
        llm_synthesizer::LlmSynthesizer, planner::Planner, retrieve::Retrieve, synthesizer::Synthesizer,
    },
    store::{
        Conversations, GraphTypes, IndexGeneration, StateStore, bucket::KvBucket, memory::MemoryStore,
        nats_loops::LoopStream,
    },
    telemetry::{TraceHeaders, context, http::Health, metrics},
    tenancy::quota::Quotas,
};

/// The stages `--stages all` runs.
pub const ALL_STAGES: [Stage; 6] =
    [Stage::Intake, Stage::Planner, Stage::Retrieve, Stage::Graph, Stage::Grader, Stage::Synthesizer];

pub struct Node {
    pub ctx: Arc<NodeContext>,
    /// What `/readyz` reports; shared with the HTTP server of a serving process.
    pub health: Arc<Health>,
    pub retriever: Option<Arc<Retriever>>,
    pub graph: Option<Arc<dyn GraphStore>>,
    /// The retrieve stage's cache in this process, for its stats.
    pub cache: Option<Arc<RetrievalCache>>,
    supervisor: ActorRef<NodeMsg>,
    supervisor_handle: JoinHandle<()>,
    /// The stages whose work queues this process consumes.
    consuming: Vec<Stage>,
    /// The work queues, closed when the process drains.
    queues: Vec<Arc<dyn WorkQueue>>,
    tasks: Vec<JoinHandle<()>>,
    /// NATS micro services, kept alive for `nats micro ls`.
    _services: Vec<async_nats::service::Service>,
    /// This process's claim on the SQLite graph, when it serves the graph stage from one.
    _graph_owner: Option<graph::owner::SqliteOwner>,
}

/// The backends a process's stages use; each is opened only when one of its stages runs here.
#[derive(Clone, Default)]
struct Backends {
    retriever: Option<Arc<Retriever>>,
    graph: Option<Arc<dyn GraphStore>>,
    /// The LLM behind the planner, grader and synthesizer, when `llm.base_url` is set.
    llm: Option<LlmAgent>,
    /// The retrieve stage's cache, shared by its workers; `None` when `intake.cache_entries` is 0.
    cache: Option<Arc<RetrievalCache>>,
}

/// The entity types this process knows: those declared in `graph.entity_types`, and those `graph` holds when
/// this process opened it. Without any, the entity lane is skipped: there is nothing to resolve a name to, and
/// a corpus of documents is searched as documents.
async fn entity_types(config: &Config, graph: Option<&Arc<dyn GraphStore>>) -> EntityTypes {
    let declared = EntityTypes::new(&config.graph.entity_types);
    let Some(graph) = graph else { return declared };
    // Types are the schema, not data: every entity counts, whoever may read it.
    match graph.stats(&crate::access::Access::everything()).await {
        Ok(stats) => {
            let found = stats.entities_by_type.iter().filter(|(_, n)| **n > 0).map(|(t, _)| t);
            declared.union(&EntityTypes::new(found))
        }
        Err(e) => {
            tracing::warn!(error = %e, "cannot read the graph's entity types; only the declared ones are known");
            declared
        }
    }
}

/// The configured LLM, shared by this process's agents (one client, so one circuit breaker).
fn llm_agent(config: &Config) -> anyhow::Result<Option<LlmAgent>> {
    let client = LlmClient::from_config(&config.llm).context("cannot configure the LLM client")?;
    Ok(client.map(|c| {
        tracing::info!(base_url = config.llm.base_url.as_deref().unwrap_or(""), model = %config.llm.model, "LLM agents on");
        LlmAgent { client: Arc::new(c), max_repairs: config.llm.max_repairs }
    }))
}

fn logic_for(stage: Stage, ctx: &NodeContext, backends: &Backends) -> anyhow::Result<Option<Arc<dyn StageLogic>>> {
    let config = &ctx.config;
    if config.debug.null_work_turns > 0 && stage != Stage::Intake {
        return Ok(Some(Arc::new(NullWork { stage, turns: config.debug.null_work_turns })));
    }
    let types = ctx.entity_types.clone();
    let resolve_entities = config.graph.resolve_entities;
    Ok(match stage {
        Stage::Intake => None,
        Stage::Planner => {
            let planner = Planner { graph_bridges: config.graph.link_mentions, resolve_entities, types: types.clone() };
            match &backends.llm {
                Some(llm) => {
                    Some(Arc::new(LlmPlanner { llm: llm.clone(), fallback: planner, graph: config.graph.clone() }))
                }
                None => Some(Arc::new(planner)),
            }
        }
        Stage::Retrieve => {
            let retriever = backends.retriever.as_ref().context("the retrieve stage needs an index")?.clone();
            Some(Arc::new(
                Retrieve::new(retriever, config.retrieval.top_k, backends.cache.clone(), ctx.generation.clone())
                    .reading_for(config.tenants.groups.clone()),
            ))
        }
        Stage::Grader => {
            let grader = Grader { graph_bridges: config.graph.link_mentions, resolve_entities, types: types.clone() };
            match &backends.llm {
                Some(llm) => Some(Arc::new(LlmGrader { llm: llm.clone(), fallback: grader })),
                None => Some(Arc::new(grader)),
            }
        }
        Stage::Synthesizer => match &backends.llm {
            Some(llm) => Some(Arc::new(LlmSynthesizer { llm: llm.clone(), types })),
            None => Some(Arc::new(Synthesizer { types })),
        },
        Stage::Graph => {
            let store = backends.graph.as_ref().context("the graph stage needs a graph store")?.clone();
            Some(Arc::new(GraphStage { store, config: config.graph.clone(), groups: config.tenants.groups.clone() }))
        }
    })
}

impl Node {
    /// Everything in one process: in-memory bus and store, the embedded index.
    pub async fn embedded(config: Config) -> anyhow::Result<Node> {
        let config = Arc::new(config);
        let retriever = Arc::new(crate::bootstrap::open_retriever(&config).await?);
        let graph = match &retriever.graph {
            Some(graph) => graph.clone(),
            None => graph::open(&config).await?,
        };
        let bus: Arc<dyn Bus> = MemoryBus::new(config.nats.max_deliver.max(1) as u32);
        let store: Arc<dyn StateStore> = Arc::new(MemoryStore::new(config.loop_ttl()));
        let llm = llm_agent(&config)?;
        let entity_types = KnownTypes::new(entity_types(&config, Some(&graph)).await);
        let ctx =
            Arc::new(NodeContext { rewriter: llm.clone(), entity_types, ..NodeContext::in_memory(config, bus, store) });
        let cache = RetrievalCache::from_config(&ctx.config.intake);
        let backends = Backends { retriever: Some(retriever), graph: Some(graph), llm, cache };
        let node = Node::start(ctx, &ALL_STAGES, backends, Arc::new(Health::default())).await?;
        node.health.set_started();
        Ok(node)
    }

    /// The given stages of this process, attached to NATS. `health` is what the process's `/readyz` reports.
    pub async fn distributed(config: Config, stages: &[Stage], health: Arc<Health>) -> anyhow::Result<Node> {
        let url = config.nats.url.clone().context("distributed mode needs nats.url (SLEUTH__NATS__URL or NATS_URL)")?;
        let config = Arc::new(config);
        let client = connect(&url, stages, &health).await?;
        let bus = NatsBus::start(client.clone(), config.clone()).await?;
        let subjects = config.subjects();
        let store = LoopStream::new(&client, &config)?;
        let (graph_owner, retriever, graph) = open_backends(&config, stages, &health).await?;
        let js = bus.jetstream();
        let ttl = Duration::from_secs(config.intake.conversation_ttl_s);
        let conversations = KvBucket::open(
            js,
            &subjects.conversations_bucket(),
            ttl,
            config.nats.replicas,
            "sleuth conversations, one key per conversation_id",
        )
        .await?;
        // Tenants' limits hold for the deployment: every intake replica counts in one bucket.
        let quotas = if stages.contains(&Stage::Intake) {
            Quotas::on_nats(js, &subjects, config.nats.replicas).await?
        } else {
            Quotas::default()
        };
        let agents =
            stages.iter().any(|s| matches!(s, Stage::Intake | Stage::Planner | Stage::Grader | Stage::Synthesizer));
        let llm = if agents { llm_agent(&config)? } else { None };
        let opened = graph.as_ref().or(retriever.as_ref().and_then(|r| r.graph.as_ref()));
        let (entity_types, follows_types) = shared_entity_types(&config, js, opened, agents).await?;
        let ctx = Arc::new(NodeContext {
            conversations: Arc::new(Conversations::new(Arc::new(conversations), config.intake.conversation_turns)),
            generation: Arc::new(IndexGeneration::on_nats(js, &subjects, config.nats.replicas).await?),
            rewriter: if stages.contains(&Stage::Intake) { llm.clone() } else { None },
            admission: Arc::new(crate::tenancy::admission::Admission::new(config.intake.admission_min_backlog)),
            quotas: Arc::new(quotas),
            subjects,
            config,
            bus,
            store: Arc::new(store),
            stats: Arc::new(Stats::default()),
            cancels: Arc::new(Cancellations::default()),
            drain: Default::default(),
            entity_types,
        });
        let cache =
            if stages.contains(&Stage::Retrieve) { RetrievalCache::from_config(&ctx.config.intake) } else { None };
        if let Some(cache) = cache.clone() {
            health.add_collector(move || {
                let stats = cache.stats();
                metrics::retrieval_cache(stats.hits, stats.misses);
            });
        }
        let backends = Backends { retriever, graph: graph.clone(), llm, cache: cache.clone() };
        let mut node = Node::start(ctx.clone(), stages, backends, health.clone()).await?;
        node._graph_owner = graph_owner;
        node.tasks.extend(follows_types);
        ready::confirm(&ctx, &node.consuming, &health).await?;
        // Last, so no question and no lane request reaches this process, and no `nats micro` ping answers,
        // before it can take the first step.
        let (services, status_tasks, responders) =
            endpoint::register_all(&client, &ctx, stages, cache, graph.as_ref()).await?;
        let pools =
            responders.into_iter().map(|r| StageArgs { pool: Pool::Respond(r), workers: ctx.config.stages.workers });
        let pools = pools.collect();
        node.supervisor
            .call(|reply| NodeMsg::AddPools(pools, reply), None)
            .await
            .map_err(|e| anyhow::anyhow!("cannot start the endpoints' responders: {e}"))?;
        node._services = services;
        node.tasks.extend(status_tasks);
        health.set_started();
        Ok(node)
    }

    /// Starts the work pools of `stages` and the process's watchers (dead letters, cancellations, deadlines),
    /// their subscriptions opened before this returns. The caller says when the node is ready.
    async fn start(
        ctx: Arc<NodeContext>,
        stages: &[Stage],
        backends: Backends,
        health: Arc<Health>,
    ) -> anyhow::Result<Node> {
        // Downstream first, so nothing is published to a stage that is not consuming yet.
        let mut ordered: Vec<Stage> = stages.to_vec();
        ordered.sort_by_key(|s| std::cmp::Reverse(*s));
        let mut args = Vec::new();
        let mut consuming = Vec::new();
        let mut queues = Vec::new();
        for stage in ordered {
            let Some(logic) = logic_for(stage, &ctx, &backends)? else { continue };
            let queue = ctx.bus.work_queue(stage).await?;
            queues.push(queue.clone());
            args.push(StageArgs {
                pool: Pool::Work(WorkerArgs { ctx: ctx.clone(), logic, queue }),
                workers: ctx.config.stages.workers,
            });
            consuming.push(stage);
        }
        // Subscribed before any work is taken, so no dead letter, cancellation or timer goes unseen.
        let letters = ctx.bus.dead_letters(&consuming).await.context("cannot watch for dead letters")?;
        let cancels = ctx.bus.cancels().await.context("cannot listen for cancellations")?;
        let timers = ctx.bus.deadlines().await.context("cannot take deadline timers")?;
        let (supervisor, supervisor_handle) =
            Actor::spawn(None, NodeSupervisor, args).await.context("cannot start the supervisors")?;
        // A process whose watchdog, cancellation listener, dead-letter watcher or supervisors stopped takes work
        // it can no longer finish: `/healthz` fails so that a restart brings them back.
        let tasks = vec![
            spawn_vital(&health, "dead-letter watcher", dead_letters::watch(ctx.clone(), letters)),
            spawn_vital(&health, "cancellation listener", cancel::listen(ctx.clone(), cancels)),
            spawn_vital(&health, "deadline watchdog", watchdog::run(ctx.clone(), timers)),
        ];
        let root = supervisor.clone();
        health.add_vital(move || match root.get_status() {
            ActorStatus::Stopping | ActorStatus::Stopped => Err("the stage supervisors stopped".into()),
            _ => Ok(()),
        });
        // A worker that hangs on one delivery (a call that never returns) holds a slot the supervisor cannot see.
        let (held, hung_after) = (ctx.clone(), Duration::from_millis(ctx.config.stages.hung_after_ms));
        health.add_vital(move || held.drain.hung(hung_after));
        Ok(Node {
            ctx,
            health,
            retriever: backends.retriever,
            graph: backends.graph,
            cache: backends.cache,
            supervisor,
            supervisor_handle,
            consuming,
            queues,
            tasks,
            _services: Vec::new(),
            _graph_owner: None,
        })
    }

    /// Submits a question and waits for its final answer, through the events stream. `on_event` sees every
    /// progress event as it happens. The request is one trace rooted at a `sleuth.ask` span of this process.
    pub async fn ask(
        &self,
        request: AskRequest,
        on_event: Option<&mut (dyn FnMut(&Event) + Send)>,
    ) -> Result<AskReply, ErrorResponse> {
        self.ask_as(request, None, on_event).await
    }

    /// [`Node::ask`] on behalf of `by` (a tenant a gateway authenticated): the request's owner, so only that
    /// tenant may act on it. `None` is the deployment's own account.
    pub async fn ask_as(
        &self,
        mut request: AskRequest,
        by: Option<sleuth_messages::Principal>,
        mut on_event: Option<&mut (dyn FnMut(&Event) + Send)>,
    ) -> Result<AskReply, ErrorResponse> {
        let timeout = Duration::from_millis(request.timeout_ms.unwrap_or(self.ctx.config.loop_.timeout_ms) + 5_000);
        let request_id = *request.request_id.get_or_insert_with(uuid::Uuid::now_v7);
        let root = ask_span(request_id);
        let trace = context::of_span(&root, &TraceHeaders::default());
        let unavailable = |e: String| ErrorResponse::new(ErrorKind::Unavailable, e).for_request(request_id);
        // A caller that shows no progress waits for the final event alone: woken once, not at every hop.
        let events = match on_event {
            Some(_) => self.ctx.bus.events(request_id).await,
            None => self.ctx.bus.final_event(request_id).await,
        };
        let mut events = events.map_err(|e| unavailable(e.to_string()))?;
        intake::submit(&self.ctx, request, None, &trace, by).await?;
        let wait = async {
            while let Some(event) = events.next().await {
                if let Some(cb) = on_event.as_deref_mut() {
                    cb(&event);
                }
                if let EventBody::Final(reply) = event.body {
                    return Some(reply);
                }
            }
            None
        };
        let reply = match tokio::time::timeout(timeout, wait).await {
            Ok(Some(reply)) => Ok(reply),
            Ok(None) => Err(unavailable("event stream ended".into())),
            Err(_) => {
                Err(ErrorResponse::new(ErrorKind::Timeout, "no answer before the deadline").for_request(request_id))
            }
        };
        if let Ok(reply) = &reply {
            record_reply(&root, reply);
        }
        reply
    }

    /// Asks every process (here: this one) to cancel a request.
    pub async fn cancel(&self, request_id: uuid::Uuid) -> anyhow::Result<()> {
        Ok(self.ctx.bus.publish_cancel(request_id).await?)
    }

    /// Stops taking work, lets the deliveries in hand finish (at most `grace`), hands back what was fetched but
    /// not started, then stops every actor and task of this node.
    pub async fn drain(self, grace: Duration) {
        self.health.set_draining();
        self.ctx.drain.stopping.cancel();
        let until = tokio::time::Instant::now() + grace;
        while self.ctx.drain.in_flight() > 0 && tokio::time::Instant::now() < until {
            tokio::time::sleep(Duration::from_millis(20)).await;
        }
        let unfinished = self.ctx.drain.in_flight();
        if unfinished > 0 {
            tracing::warn!(unfinished, "grace period over: unfinished deliveries will be redelivered elsewhere");
        }
        for queue in &self.queues {
            queue.close().await;
        }
        self.shutdown().await;
    }

    /// Stops every actor and task of this node.
    pub async fn shutdown(self) {
        self.ctx.drain.stopping.cancel();
        self.supervisor.kill();
        let _ = self.supervisor_handle.await;
        for task in self.tasks {
            task.abort();
        }
        // The workers' last acks were sent without waiting; make sure they leave the process.
        match tokio::time::timeout(std::time::Duration::from_secs(2), self.ctx.bus.flush()).await {
            Ok(Ok(())) => {}
            Ok(Err(e)) => tracing::warn!(error = %e, "cannot flush the bus before stopping"),
            Err(_) => tracing::warn!("the bus did not flush within 2 s of stopping"),
        }
        for service in self._services {
            let _ = service.stop().await;
        }
        if let Some(graph) = self.graph {
            // Bounded: a connection still checked out by an aborted task must not hold shutdown up.
            let _ = tokio::time::timeout(std::time::Duration::from_secs(5), graph.close()).await;
        }
        // Released only once the graph is closed, so the next owner finds the file whole.
        drop(self._graph_owner);
    }
}

/// Connects to NATS for `stages`, with `/readyz` saying so while it waits and failing once the connection drops.
async fn connect(url: &str, stages: &[Stage], health: &Health) -> anyhow::Result<async_nats::Client> {
    let names: Vec<&str> = stages.iter().map(|s| s.as_str()).collect();
    // `/readyz` is readable by anyone who can reach the probe port: never the URL's password.
    health.set_waiting(format!("connecting to nats at {}", crate::secrets::redact_url(url)));
    let client = crate::nats_client::connect(url, &format!("sleuth {}", names.join(","))).await?;
    let connection = client.clone();
    health.add_check(move || match connection.connection_state() {
        async_nats::connection::State::Connected => Ok(()),
        other => Err(format!("nats connection {other}")),
    });
    Ok(client)
}

/// The backends `stages` use, opened with retries while `/readyz` says what is awaited: the index for retrieve,
/// the graph for the graph stage (claimed first when it is the embedded SQLite file).
async fn open_backends(
    config: &Arc<Config>,
    stages: &[Stage],
    health: &Health,
) -> anyhow::Result<(Option<graph::owner::SqliteOwner>, Option<Arc<Retriever>>, Option<Arc<dyn GraphStore>>)> {
    health.set_waiting("opening the backends");
    // Claimed before anything opens the file, so a second graph process fails here, at once, saying why.
    let graph_owner = match stages.contains(&Stage::Graph) && config.database.url.is_none() {
        true => Some(graph::owner::claim(&config.data_dir())?),
        false => None,
    };
    let retriever = if stages.contains(&Stage::Retrieve) {
        let open = || crate::bootstrap::open_retriever(config);
        Some(Arc::new(startup::open_with_retries(health, "the index", open).await?))
    } else {
        None
    };
    let graph = match (&retriever, stages.contains(&Stage::Graph)) {
        (_, false) => None,
        (Some(r), true) if r.graph.is_some() => r.graph.clone(),
        (_, true) => Some(startup::open_with_retries(health, "the graph", || graph::open(config)).await?),
    };
    Ok((graph_owner, retriever, graph))
}

/// The graph's entity types: found in the graph where this process opens it (`opened`) and announced to the
/// deployment; elsewhere learnt from the announcements, now and (for the agents) whenever a graph process or an
/// ingestion adds some, by the returned task.
async fn shared_entity_types(
    config: &Config,
    js: &async_nats::jetstream::Context,
    opened: Option<&Arc<dyn GraphStore>>,
    agents: bool,
) -> anyhow::Result<(KnownTypes, Option<JoinHandle<()>>)> {
    let entity_types = KnownTypes::new(entity_types(config, opened).await);
    let shared = GraphTypes::on_nats(js, &config.subjects(), config.nats.replicas).await?;
    if opened.is_some()
        && let Err(e) = shared.add(&entity_types.get()).await
    {
        tracing::warn!(error = %e, "cannot announce the graph's entity types to the other stages");
    }
    if !agents {
        return Ok((entity_types, None));
    }
    match shared.current().await {
        Ok(announced) => {
            entity_types.add(&announced);
        }
        Err(e) => tracing::warn!(error = %e, "cannot read the graph's entity types; following them"),
    }
    let follows = tokio::spawn(shared.follow(entity_types.clone()));
    Ok((entity_types, Some(follows)))
}

/// The root span of a request asked from this process: `sleuth.ask`, with the route and the reason it ended
/// recorded when the reply arrives.
pub fn ask_span(request_id: uuid::Uuid) -> tracing::Span {
    tracing::info_span!(
        "sleuth.ask",
        otel.kind = "client",
        sleuth.request_id = %request_id,
        sleuth.turn = tracing::field::Empty,
        sleuth.stage = "ask",
        sleuth.route = tracing::field::Empty,
        sleuth.termination_reason = tracing::field::Empty,
    )
}

/// Records on the root span what the reply says: route, turns and why the request ended.
pub fn record_reply(root: &tracing::Span, reply: &AskReply) {
    if let Some(route) = reply.route {
        root.record("sleuth.route", format!("{route:?}").to_lowercase());
    }
    root.record("sleuth.turn", reply.turns.len() as u64);
    match &reply.outcome {
        Outcome::Answer(answer) => {
            root.record("sleuth.termination_reason", answer.termination_reason.as_str());
        }
        Outcome::Error(error) => {
            root.record("sleuth.termination_reason", format!("error: {:?}", error.kind).to_lowercase());
            crate::telemetry::record_error(root, &error.message);
        }
    }
}

/// Runs a loop the process cannot work without; `/healthz` fails once it has stopped, for whatever reason.
fn spawn_vital(
    health: &Health,
    what: &'static str,
    run: impl Future<Output = anyhow::Result<()>> + Send + 'static,
) -> JoinHandle<()> {
    let stopped = Arc::new(AtomicBool::new(false));
    let flag = stopped.clone();
    health.add_vital(move || if flag.load(Ordering::SeqCst) { Err(format!("the {what} stopped")) } else { Ok(()) });
    tokio::spawn(async move {
        if let Err(e) = run.await {
            tracing::error!(error = format!("{e:#}"), task = what, "a vital task stopped");
        }
        stopped.store(true, Ordering::SeqCst);
    })
}

#[cfg(test)]
mod tests {
    use super::*;

    #[tokio::test]
    async fn a_vital_task_that_stops_makes_the_process_stuck() {
        let health = Health::default();
        let (stop, stopped) = tokio::sync::oneshot::channel::<()>();
        let running = spawn_vital(&health, "deadline watchdog", async move {
            let _ = stopped.await;
            anyhow::bail!("the timers' consumer was deleted")
        });
        assert_eq!(health.liveness(), Ok(()));
        stop.send(()).expect("the task is waiting");
        running.await.expect("the task ends");
        assert_eq!(health.liveness(), Err("the deadline watchdog stopped".into()));
    }
}
