//! The client side of `sleuth ask`, `search` and `watch`: asking the cluster over NATS (or an embedded node),
//! following events, announcing ingestions, and rendering an answer for a terminal.

use std::time::Duration;

use anyhow::Context;
use futures::StreamExt;
use sleuth_messages::{
    AgentResponse, AskReply, AskRequest, Encoding, Event, EventBody, EventKind, LoopState, Outcome, PlannerState,
    codec, subjects::Subjects,
};

use crate::{
    config::Config,
    node::{self, Node},
    store::{IndexGeneration, StateStore, nats_loops::LoopStream},
    telemetry::TraceHeaders,
};

/// `sleuth ask`: asks one question of the cluster when a NATS URL is configured, else of an embedded node started
/// for it. With `want_state`, the request's stored loop state (its plan, every step) comes back too. When
/// `interrupt` completes first, the request is cancelled and its final reply awaited, 5 s at most.
pub async fn ask(
    config: Config,
    mut request: AskRequest,
    on_event: Option<&mut (dyn FnMut(&Event) + Send)>,
    want_state: bool,
    interrupt: impl Future<Output = ()>,
) -> anyhow::Result<(AskReply, Option<LoopState>)> {
    let request_id = *request.request_id.get_or_insert_with(uuid::Uuid::now_v7);
    match &config.nats.url {
        Some(url) => {
            let timeout = Duration::from_millis(request.timeout_ms.unwrap_or(config.loop_.timeout_ms) + 5_000);
            let root = node::ask_span(request_id);
            let trace = crate::telemetry::context::of_span(&root, &Default::default());
            let nats = crate::nats_client::connect(url, "sleuth ask").await?;
            let subjects = config.subjects();
            let ask = ask_with(&nats, &subjects, request, timeout, on_event, &trace);
            let reply = until_cancelled(ask, request_id, interrupt, || async {
                nats.publish(subjects.cancel(request_id), Default::default()).await?;
                Ok(nats.flush().await?)
            })
            .await?;
            node::record_reply(&root, &reply);
            drop(root);
            let state = match (want_state, reply.request_id) {
                (true, Some(id)) => remote_state(url, &config, id).await.ok().flatten(),
                _ => None,
            };
            Ok((reply, state))
        }
        None => {
            let node = Node::embedded(config).await?;
            let ask = async { node.ask(request, on_event).await.map_err(|e| anyhow::anyhow!("{e}")) };
            let reply = until_cancelled(ask, request_id, interrupt, || node.cancel(request_id)).await;
            let state = match (want_state, reply.as_ref().ok().and_then(|r| r.request_id)) {
                (true, Some(id)) => {
                    node.ctx.store.load(id).await.ok().flatten().map(|(s, _)| std::sync::Arc::unwrap_or_clone(s))
                }
                _ => None,
            };
            node.shutdown().await;
            Ok((reply?, state))
        }
    }
}

/// Runs `ask` to its end; when `interrupt` completes first, sends the cancellation and waits (5 s at most) for the
/// final reply it causes.
async fn until_cancelled<T>(
    ask: impl Future<Output = anyhow::Result<T>>,
    request_id: uuid::Uuid,
    interrupt: impl Future<Output = ()>,
    cancel: impl AsyncFnOnce() -> anyhow::Result<()>,
) -> anyhow::Result<T> {
    tokio::pin!(ask);
    tokio::select! {
        done = &mut ask => done,
        () = interrupt => {
            cancel().await?;
            match tokio::time::timeout(Duration::from_secs(5), ask).await {
                Ok(done) => done,
                Err(_) => anyhow::bail!("request {request_id} was cancelled; no final reply within 5 s"),
            }
        }
    }
}

/// `sleuth search`: the search lane of the cluster when a NATS URL is configured, else of the configured graph.
/// `by` is the tenant to search as (`sleuth search --tenant`); without one, shared entities only, as for any
/// request without a principal.
pub async fn search(
    config: &Config,
    request: sleuth_messages::SearchRequest,
    by: Option<&sleuth_messages::Principal>,
) -> anyhow::Result<sleuth_messages::EntitiesReply> {
    match &config.nats.url {
        Some(url) => search_remote(url, &config.subjects(), &request, by).await,
        None => {
            let store = crate::graph::open(config).await?;
            let access = crate::access::Access::of(by, &config.tenants.groups);
            Ok(entities_reply(crate::graph::lanes::search(store, request, access).await))
        }
    }
}

/// A request's stored loop state on a cluster: its plan, every step and report. `None` once it has expired.
pub async fn remote_state(url: &str, config: &Config, request_id: uuid::Uuid) -> anyhow::Result<Option<LoopState>> {
    let client = crate::nats_client::connect(url, "sleuth ask").await?;
    let store = LoopStream::new(&client, config)?;
    Ok(store.load(request_id).await?.map(|(state, _)| std::sync::Arc::unwrap_or_clone(state)))
}

/// Tells every replica that the index changed: moves the deployment's index generation, which empties every
/// retrieval cache on its next lookup. `None` when no NATS is configured (an embedded index has no other
/// process caching it).
pub async fn announce_ingestion(config: &Config) -> anyhow::Result<Option<u64>> {
    let Some(url) = &config.nats.url else { return Ok(None) };
    let client = crate::nats_client::connect(url, "sleuth ingest").await?;
    let js = async_nats::jetstream::new(client);
    Ok(Some(IndexGeneration::on_nats(&js, &config.subjects(), config.nats.replicas).await?.bump().await?))
}

/// Tells every process of the deployment the entity types an ingested graph holds, so the stages that do not open
/// the graph know them. `false` when no NATS is configured.
pub async fn announce_entity_types(config: &Config, types: &crate::entity_types::EntityTypes) -> anyhow::Result<bool> {
    let Some(url) = &config.nats.url else { return Ok(false) };
    let client = crate::nats_client::connect(url, "sleuth ingest").await?;
    let js = async_nats::jetstream::new(client);
    crate::store::GraphTypes::on_nats(&js, &config.subjects(), config.nats.replicas).await?.add(types).await?;
    Ok(true)
}

/// Creates (or finds) everything a deployment needs on NATS: the loop bucket, the timer, events and dead-letter
/// streams, every stage's durable consumer and the watchdog's, and the other KV buckets. Idempotent; refuses, with the command that fixes it, a
/// stream that exists with other replicas than `nats.replicas`. Run it as a user allowed to create them (the
/// admin user of `deploy/nats/accounts.conf`); stage users may then only use them. With `database.url`, it also
/// migrates the graph schema in Postgres and lets `database.reader_role` read it (as the schema's owner), so that
/// serving processes may run with `database.migrate = false` on that role.
pub async fn setup(config: &Config) -> anyhow::Result<String> {
    let url = config.nats.url.clone().context("setup needs a NATS URL (SLEUTH__NATS__URL or NATS_URL)")?;
    let client = crate::nats_client::connect(&url, "sleuth setup").await?;
    let bus = crate::bus::nats::NatsBus::start(client, std::sync::Arc::new(config.clone())).await?;
    let consumers = bus.provision_consumers().await?;
    let subjects = config.subjects();
    let (js, replicas) = (bus.jetstream(), config.nats.replicas);
    let conversations = Duration::from_secs(config.intake.conversation_ttl_s);
    let description = "sleuth conversations, one key per conversation_id";
    crate::store::bucket::KvBucket::open(js, &subjects.conversations_bucket(), conversations, replicas, description)
        .await?;
    IndexGeneration::on_nats(js, &subjects, replicas).await?;
    crate::tenancy::quota::Quotas::on_nats(js, &subjects, replicas).await?;
    // An existing stream keeps the replicas it was created with: a deployment moved to a cluster would go on
    // running on one copy while believing it has three.
    let streams = [
        subjects.loops_stream(),
        subjects.work_stream(),
        subjects.events_stream(),
        subjects.dead_stream(),
        format!("KV_{}", subjects.conversations_bucket()),
        format!("KV_{}", subjects.meta_bucket()),
        format!("KV_{}", subjects.quotas_bucket()),
    ];
    for name in streams {
        let mut stream = js.get_stream(&name).await.with_context(|| format!("cannot read stream {name}"))?;
        let has = stream.info().await.with_context(|| format!("cannot read stream {name}"))?.config.num_replicas;
        anyhow::ensure!(
            has == replicas,
            "stream {name} has {has} replica(s) but nats.replicas is {replicas}: change it with \
             `nats stream edit {name} --replicas {replicas}` (as the admin user), then run `sleuth setup` again"
        );
    }
    let nats = format!(
        "streams {}, {} and {}, consumers {}, buckets {}, {}, {} and {}: ready ({replicas} replica(s) each)",
        subjects.work_stream(),
        subjects.events_stream(),
        subjects.dead_stream(),
        consumers.join(", "),
        subjects.loops_bucket(),
        subjects.conversations_bucket(),
        subjects.meta_bucket(),
        subjects.quotas_bucket(),
    );
    // The graph's schema, as its owner, so that serving processes may run on a role that only reads it.
    match &config.database.url {
        Some(url) => {
            let graph = crate::graph::schema::prepare(url, config.database.reader_role.as_deref()).await?;
            Ok(format!("{nats}\n{graph}"))
        }
        None => Ok(nats),
    }
}

/// The plan in a line: strategy, rounds, acceptance criteria and who wrote it.
pub fn render_plan(plan: &PlannerState) -> String {
    let name = |v: serde_json::Result<serde_json::Value>| {
        v.ok().and_then(|v| v.as_str().map(str::to_string)).unwrap_or_default()
    };
    let rounds: Vec<String> = plan
        .retrieval_rounds
        .iter()
        .map(|r| format!("{}: {}", name(serde_json::to_value(r.purpose)), r.query_variants.join(" | ")))
        .collect();
    let c = &plan.acceptance_criteria;
    format!(
        "· plan      {} [{}], needs {} source(s) covering {:?} ({})",
        name(serde_json::to_value(plan.strategy)),
        rounds.join("; "),
        c.min_independent_sources,
        c.must_cover_entities,
        plan.planner_meta.planner_version
    )
}

/// How long a question may go without a sign that an intake replica took it up before it is sent again.
pub const RESEND_AFTER: Duration = Duration::from_secs(2);

/// How often a request under way is looked up in the loop bucket, in case its final event was missed
/// ([`ask_as`]).
pub const LOOK_AFTER: Duration = Duration::from_secs(3);

/// How long "no responders" may last before `ask` says nothing is running: a restarted NATS server's clients
/// subscribe again within a second or two.
const NO_RESPONDERS_GRACE: Duration = Duration::from_secs(4);

/// How soon a question nobody answered is sent again: intake subscribes last, once its process can take the first
/// step, so a cluster that is starting up is ready within moments.
const NO_RESPONDERS_RESEND: Duration = Duration::from_millis(200);

/// Whether a reply is intake's refusal to start the request for now because the state store or the bus was away
/// past its patience (a NATS cluster electing leaders again and again): the request was never started, or was
/// and is found under its id, so sending the same request again is safe, and worth it while the caller waits.
/// Every other error is the caller's to see at once: `overloaded` is load shedding, and whether to come back is
/// the caller's decision.
fn refused_for_now(reply: &AskReply) -> bool {
    matches!(&reply.outcome, Outcome::Error(e) if e.kind == sleuth_messages::ErrorKind::Unavailable && e.retryable)
}

/// Sends `request` to `sleuth.v1.ask` and waits for the reply. With `on_event`, prints progress as it happens.
pub async fn ask_remote(
    url: &str,
    subjects: &Subjects,
    request: AskRequest,
    timeout: Duration,
    on_event: Option<&mut (dyn FnMut(&Event) + Send)>,
) -> anyhow::Result<AskReply> {
    let client = crate::nats_client::connect(url, "sleuth ask").await?;
    ask_with(&client, subjects, request, timeout, on_event, &TraceHeaders::default()).await
}

/// [`ask_remote`] on an existing connection. `trace` makes the request part of the caller's trace (the
/// `traceparent`, `tracestate` and `baggage` headers of the request). The answer is the reply to the request's
/// inbox, or the `final` event if that comes first: both carry the same reply.
pub async fn ask_with(
    client: &async_nats::Client,
    subjects: &Subjects,
    request: AskRequest,
    timeout: Duration,
    on_event: Option<&mut (dyn FnMut(&Event) + Send)>,
    trace: &TraceHeaders,
) -> anyhow::Result<AskReply> {
    ask_as(client, subjects, request, timeout, on_event, trace, None).await
}

/// [`ask_with`] on behalf of `by`: the request carries the `Nats-Request-Info` header a tenant's import would
/// give it, so intake records `by` as its owner. Only a process of the deployment's own account may say so (a
/// gateway that authenticated the tenant): across a tenant's import the server replaces the header.
pub async fn ask_as(
    client: &async_nats::Client,
    subjects: &Subjects,
    mut request: AskRequest,
    timeout: Duration,
    mut on_event: Option<&mut (dyn FnMut(&Event) + Send)>,
    trace: &TraceHeaders,
    by: Option<&sleuth_messages::Principal>,
) -> anyhow::Result<AskReply> {
    let request_id = *request.request_id.get_or_insert_with(uuid::Uuid::now_v7);
    // Core subscription: JetStream messages are ordinary NATS messages too, so progress arrives live.
    let mut events = client.subscribe(subjects.events(request_id)).await.context("cannot subscribe to events")?;
    let payload = codec::encode(&request, Encoding::MsgPack)?;
    let inbox = client.new_inbox();
    let mut replies = client.subscribe(inbox.clone()).await.context("cannot subscribe to the reply inbox")?;
    let mut headers = async_nats::HeaderMap::new();
    trace.to_nats(&mut headers);
    on_behalf_of(&mut headers, by);
    let payload = bytes::Bytes::from(payload);
    let send = || {
        let (subject, inbox, headers, payload) = (subjects.ask(), inbox.clone(), headers.clone(), payload.clone());
        async move {
            client
                .publish_with_reply_and_headers(subject, inbox, headers, payload)
                .await
                .context("cannot send the question")?;
            client.flush().await.context("cannot send the question")
        }
    };
    send().await?;
    // A question is core NATS: an intake replica that dies holding it loses it. Until the request shows a sign of
    // life (its `accepted` event, or any reply), send it again under the same request id, which intake treats
    // as the same request (it never starts a request twice).
    let mut resend = tokio::time::interval_at(tokio::time::Instant::now() + RESEND_AFTER, RESEND_AFTER);
    let mut taken_up = false;
    // A stage that re-publishes after a redelivery sends an event again (JetStream keeps one copy, but a core
    // subscriber sees both): show each once.
    let mut seen = std::collections::HashSet::new();
    let mut no_responders_since = None;
    // Intake's refusals for now ([`refused_for_now`]): how many, and the last, which is the answer if the time
    // runs out before another reply.
    let (mut refusals, mut refused) = (0, None);
    // A final event published while this connection was failing over to another server never reaches a core
    // subscription. So a request under way for longer than a look is looked up in the loop bucket now and then,
    // and a finished one's reply read from its final state. Without access to the bucket (a tenant's client) it
    // waits for the event alone.
    let store = LoopStream::of(client, subjects.clone()).ok();
    let mut look = tokio::time::interval_at(tokio::time::Instant::now() + LOOK_AFTER, LOOK_AFTER);
    let wait = async {
        loop {
            tokio::select! {
                _ = look.tick(), if store.is_some() => {
                    let Some(store) = &store else { continue };
                    match store.load(request_id).await {
                        Ok(Some((state, _))) if state.phase == sleuth_messages::Phase::Done => {
                            tracing::info!(%request_id, "the request finished while its events were out of reach: its reply is read from its final state");
                            let reply = sleuth_core::machine::reply_of(&state);
                            if let Some(cb) = on_event.as_deref_mut() {
                                let turn = reply.turns.last().map_or(0, |t| t.turn);
                                cb(&Event { request_id, turn, kind: EventKind::Final, body: EventBody::Final(reply.clone()) });
                            }
                            return Ok(reply);
                        }
                        Ok(_) => {}
                        Err(e) => tracing::debug!(%request_id, error = %e, "cannot look the request up in the loop bucket"),
                    }
                }
                _ = resend.tick(), if !taken_up => {
                    tracing::info!(%request_id, "no intake has taken the question up yet: sending it again");
                    if let Err(e) = send().await {
                        // The connection is down: the client reconnects on its own, and the next tick tries again.
                        tracing::warn!(%request_id, error = format!("{e:#}"), "cannot send the question again yet");
                    }
                }
                reply = replies.next() => {
                    let reply = reply.context("reply inbox closed")?;
                    if reply.status == Some(async_nats::StatusCode::NO_RESPONDERS) {
                        // Right after a NATS server restart the stages may not have subscribed again yet: the
                        // next re-send tries again. Nothing answering for longer means nothing is running.
                        let since = *no_responders_since.get_or_insert_with(std::time::Instant::now);
                        if since.elapsed() >= NO_RESPONDERS_GRACE {
                            anyhow::bail!("nothing answers {}: start the stages with `sleuth serve --stages all`", subjects.ask());
                        }
                        tracing::info!(%request_id, "nothing answers the question yet: sending it again shortly");
                        resend.reset_after(NO_RESPONDERS_RESEND);
                        continue;
                    }
                    let reply = codec::decode::<AskReply>(&reply.payload)?.0;
                    // Only this request's answer, or intake's refusal of it (which may not know its id), is the
                    // reply: anything else on the inbox is someone else's message.
                    let refusal = reply.request_id.is_none() && matches!(reply.outcome, Outcome::Error(_));
                    if reply.request_id != Some(request_id) && !refusal {
                        tracing::warn!(%request_id, other = ?reply.request_id, "ignored a reply for another request on this inbox");
                        continue;
                    }
                    if refused_for_now(&reply) {
                        let wait = crate::guard::backoff(refusals, 250, 4_000);
                        refusals += 1;
                        tracing::warn!(%request_id, refusals, wait_ms = wait.as_millis() as u64, reply = ?reply.outcome, "intake cannot start the question for now: sending it again");
                        refused = Some(reply);
                        taken_up = false;
                        resend.reset_after(wait);
                        continue;
                    }
                    if let Some(cb) = on_event.as_deref_mut() {
                        // The reply may overtake the final event it duplicates.
                        let turn = reply.turns.last().map_or(0, |t| t.turn);
                        cb(&Event { request_id, turn, kind: EventKind::Final, body: EventBody::Final(reply.clone()) });
                    }
                    return Ok(reply);
                }
                Some(event) = events.next() => {
                    let Ok((event, _)) = codec::decode::<Event>(&event.payload) else { continue };
                    if event.request_id != request_id {
                        continue;
                    }
                    taken_up = true;
                    if !seen.insert(event.msg_id()) {
                        continue;
                    }
                    if let Some(cb) = on_event.as_deref_mut() {
                        cb(&event);
                    }
                    if let EventBody::Final(reply) = event.body {
                        return Ok(reply);
                    }
                }
            }
        }
    };
    match tokio::time::timeout(timeout, wait).await {
        Ok(answer) => answer,
        Err(_) => refused.ok_or_else(|| {
            anyhow::anyhow!("no answer within {timeout:?}: are the sleuth stages running (sleuth serve --stages all)?")
        }),
    }
}

/// Prints a request's events until its `final` event.
pub async fn watch(url: &str, config: &crate::config::Config, request_id: uuid::Uuid) -> anyhow::Result<()> {
    let client = crate::nats_client::connect(url, "sleuth watch").await?;
    let bus = crate::bus::nats::NatsBus::start(client, std::sync::Arc::new(config.clone())).await?;
    let mut events = crate::bus::Bus::events(&*bus, request_id).await?;
    while let Some(event) = events.next().await {
        println!("{}", render_event(&event));
        if matches!(event.body, EventBody::Final(_)) {
            break;
        }
    }
    Ok(())
}

/// A request's loop state as pretty JSON, with the revision it was read at (`{"revision": n, "state": {…}}`), from
/// the loop bucket; `None` when the request is unknown or its state expired.
pub async fn state(
    url: &str,
    config: &crate::config::Config,
    request_id: uuid::Uuid,
) -> anyhow::Result<Option<String>> {
    let client = crate::nats_client::connect(url, "sleuth state").await?;
    let store = crate::store::nats_loops::LoopStream::new(&client, config)?;
    let Some((state, revision)) = crate::store::StateStore::load(&store, request_id).await? else { return Ok(None) };
    let json = sleuth_messages::codec::encode(&*state, sleuth_messages::Encoding::Json)?;
    let state: serde_json::Value = serde_json::from_slice(&json)?;
    Ok(Some(serde_json::to_string_pretty(&serde_json::json!({ "revision": revision, "state": state }))?))
}

/// One line per event, for `--watch`.
pub fn render_event(event: &Event) -> String {
    match &event.body {
        EventBody::Accepted(a) => {
            let resolved = if a.resolved.is_empty() { String::new() } else { format!(" resolved={:?}", a.resolved) };
            format!(
                "· accepted  route={:?} type={:?} entities={:?} complexity={:.2} weights=vector {:.1}/graph {:.1}{resolved}",
                a.route, a.query_type, a.entities, a.complexity.score, a.weights.vector, a.weights.graph
            )
        }
        EventBody::Planned(step) => format!(
            "· turn {}    planned {} ({})",
            event.turn,
            step.actions.iter().map(|a| a.describe()).collect::<Vec<_>>().join(" + "),
            step.rationale
        ),
        EventBody::Retrieved { cards, new_cards } => {
            format!("· turn {}    retrieved: {new_cards} new cards, {cards} in all", event.turn)
        }
        EventBody::Graded(r) => {
            format!("· turn {}    graded: sufficient={} ({})", event.turn, r.sufficient, r.rationale)
        }
        EventBody::Final(reply) => match &reply.outcome {
            Outcome::Answer(AgentResponse { short_answer: Some(short), .. }) => {
                format!("· final     {}", short_answer_line(short))
            }
            _ => "· final".to_string(),
        },
    }
}

/// The short answer with its citation marks: "One Piece [1]".
pub fn short_answer_line(short: &sleuth_messages::ShortAnswer) -> String {
    let marks: String = short.citations.iter().map(|n| format!("[{n}]")).collect();
    format!("{} {marks}", short.text)
}

/// The human-readable answer: the short answer first, then its support, citations, the loop's steps and why it
/// stopped.
pub fn render(reply: &AskReply) -> String {
    let mut out = String::new();
    match &reply.outcome {
        Outcome::Answer(answer) => {
            match &answer.short_answer {
                Some(short) => {
                    // The short answer on a line of its own, then its support without repeating it.
                    let lead = short_answer_line(short);
                    let rest = answer.answer.replacen(&format!("{lead}."), "", 1);
                    out.push_str(&format!("{lead}\n\n{}\n", rest.split_whitespace().collect::<Vec<_>>().join(" ")));
                }
                None => out.push_str(&format!("{}\n", answer.answer)),
            }
            if !answer.citations.is_empty() {
                out.push_str("\nCitations:\n");
                for c in &answer.citations {
                    out.push_str(&format!("  [{}] {} ({})\n", c.n, c.place(), c.doc_id));
                }
            }
            for d in &answer.degraded {
                out.push_str(&format!("\nDegraded: {d}\n"));
            }
            out.push_str("\nSteps:\n");
            for t in &reply.turns {
                let grade = match (t.sufficient, &t.grader) {
                    (Some(s), Some(why)) => format!(" → {} ({why})", if s { "sufficient" } else { "insufficient" }),
                    _ => String::new(),
                };
                out.push_str(&format!(
                    "  {}. {} — {} hits, {} new{grade}\n",
                    t.turn,
                    t.actions.join(" + "),
                    t.hits,
                    t.new_cards
                ));
            }
            if let (Some(route), Some(c)) = (reply.route, &reply.complexity) {
                out.push_str(&format!("\nroute: {} · {}", format!("{route:?}").to_lowercase(), c.reason));
            }
            if let Some(llm) = &reply.llm {
                out.push_str(&format!(
                    "\nllm: {} calls · {} tokens in, {} out · {} repaired · {} fell back",
                    llm.calls, llm.input_tokens, llm.output_tokens, llm.repairs, llm.fallbacks
                ));
            }
            out.push_str(&format!(
                "\nstopped: {} · confidence {:.2} · {} ms",
                answer.termination_reason.as_str(),
                answer.confidence,
                reply.elapsed_ms
            ));
        }
        Outcome::Error(e) => out.push_str(&format!("error: {} ({:?}, retryable: {})", e.message, e.kind, e.retryable)),
    }
    if let Some(id) = reply.request_id {
        out.push_str(&format!(" · request {id}"));
    }
    out
}

/// Asks the search lane (`sleuth.v1.search`) of a cluster.
pub async fn search_remote(
    url: &str,
    subjects: &sleuth_messages::subjects::Subjects,
    request: &sleuth_messages::SearchRequest,
    by: Option<&sleuth_messages::Principal>,
) -> anyhow::Result<sleuth_messages::EntitiesReply> {
    let client = crate::nats_client::connect(url, "sleuth search").await?;
    lane(&client, subjects.search(), request, by).await
}

/// A request to one of the fast lanes (`sleuth.v1.search`, `sleuth.v1.hydrate`), answered by a graph stage.
pub async fn lane<T: serde::Serialize>(
    client: &async_nats::Client,
    subject: String,
    request: &T,
    by: Option<&sleuth_messages::Principal>,
) -> anyhow::Result<sleuth_messages::EntitiesReply> {
    let body = sleuth_messages::codec::encode(request, sleuth_messages::Encoding::MsgPack)?;
    let mut headers = async_nats::HeaderMap::new();
    on_behalf_of(&mut headers, by);
    let ask = client.request_with_headers(subject.clone(), headers, body.into());
    let reply = tokio::time::timeout(Duration::from_secs(10), ask)
        .await
        .map_err(|_| anyhow::anyhow!("no answer from {subject} within 10 s: is a graph stage running?"))?
        .map_err(|e| anyhow::anyhow!("{subject} request failed: {e}"))?;
    Ok(sleuth_messages::codec::decode(&reply.payload)?.0)
}

/// Names the tenant a request is sent for, as nats-server would on a tenant's import: the gateway, in sleuth's own
/// account, asks for the tenant whose API key it checked (a tenant's own connection cannot set this header).
fn on_behalf_of(headers: &mut async_nats::HeaderMap, by: Option<&sleuth_messages::Principal>) {
    if let Some(by) = by {
        let info = serde_json::json!({ "acc": by.tenant, "user": by.user }).to_string();
        headers.insert(sleuth_messages::principal::REQUEST_INFO_HEADER, info.as_str());
    }
}

/// A lane's answer as its reply: the entities, or the error.
pub fn entities_reply(
    found: Result<Vec<sleuth_messages::EntityRecord>, sleuth_messages::ErrorResponse>,
) -> sleuth_messages::EntitiesReply {
    match found {
        Ok(entities) => sleuth_messages::EntitiesReply { entities, error: None },
        Err(error) => sleuth_messages::EntitiesReply { entities: vec![], error: Some(error) },
    }
}
