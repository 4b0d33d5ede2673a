//! Tenants on one deployment, as `deploy/nats/accounts.conf` defines them: ALPHA and BETA are NATS accounts that
//! import `sleuth.v1.ask`, `sleuth.v1.cancel.*`, the fast lanes and their own requests' events. As `beta`, every attack on `alpha`'s requests fails (reading
//! its replies or events, cancelling it, re-sending its request id, aiming a reply at its state, claiming to be
//! ALPHA, sharing its conversation id, asking what only ALPHA's documents answer), while `alpha`'s own requests
//! keep working.

use std::time::{Duration, Instant};

use futures::StreamExt;
use sleuth_actors::{client, config::Config};
use sleuth_messages::{
    AskReply, AskRequest, Conversation, ErrorKind, EventKind, Outcome, Phase, Principal, TerminationReason, codec,
    subjects::Subjects,
};
use sleuth_tests::{nats, process::*, stored_state};

const QUESTION: &str = "Which anime is Luffy in?";

/// A deployment on the default subjects (`sleuth.v1`, no suffix), which are the ones accounts.conf names, set up
/// as `admin`. Its config reads the loop state as `admin`.
fn deployment(server: &nats::NatsServer, dir: &std::path::Path) -> (Deployment, Config) {
    let mut deployment = Deployment::seeded(&server.url, "tenants", dir);
    deployment.prefix = "sleuth.v1".into();
    deployment.suffix = String::new();
    let admin = nats::url_as(server, "admin");
    let setup = run_cli(&deployment, &["setup"], &[("SLEUTH__NATS__URL", &admin)]);
    assert!(setup.status.success(), "sleuth setup as admin: {}", String::from_utf8_lossy(&setup.stderr));
    let mut config = deployment.config();
    config.nats.url = Some(admin);
    (deployment, config)
}

async fn connect_as(server: &nats::NatsServer, user: &str) -> async_nats::Client {
    let url = nats::url_as(server, user);
    sleuth_actors::nats_client::connect(&url, "tenants test")
        .await
        .unwrap_or_else(|e| panic!("cannot connect as {user}: {e}"))
}

/// Asks on `client`'s connection, as `sleuth ask` does, and returns the reply.
async fn ask(client: &async_nats::Client, subjects: &Subjects, request: AskRequest) -> AskReply {
    let timeout = Duration::from_secs(60);
    client::ask_with(client, subjects, request, timeout, None, &Default::default()).await.expect("a reply")
}

fn error_kind(reply: &AskReply) -> Option<ErrorKind> {
    match &reply.outcome {
        Outcome::Error(e) => Some(e.kind),
        Outcome::Answer(_) => None,
    }
}

/// Waits until the request's state exists, and returns it.
async fn state_of(config: &Config, id: uuid::Uuid) -> sleuth_messages::LoopState {
    let until = Instant::now() + Duration::from_secs(20);
    loop {
        if let Some(state) = stored_state(config, id).await {
            return state;
        }
        assert!(Instant::now() < until, "request {id} was never stored");
        tokio::time::sleep(Duration::from_millis(50)).await;
    }
}

/// Every stage as `sleuth`, intake with `env` too, and a planner that sits on its work for 20 s: a request stays
/// under way.
fn planner_holds_work(server: &nats::NatsServer, deployment: &Deployment, env: &[(&str, &str)]) -> [ServeProcess; 2] {
    let sleuth = nats::url_as(server, "sleuth");
    let rest: Vec<(&str, &str)> =
        [("SLEUTH__NATS__URL", sleuth.as_str())].into_iter().chain(env.iter().copied()).collect();
    let planner = [("SLEUTH__NATS__URL", sleuth.as_str()), ("SLEUTH__DEBUG__STAGE_DELAY_MS", "20000")];
    [
        ServeProcess::start(deployment, "intake,retrieve,graph,grader,synthesizer", &rest),
        ServeProcess::start(deployment, "planner", &planner),
    ]
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_tenant_may_cancel_or_resend_only_its_own_requests() {
    let server = nats::with_accounts();
    let dir = tempfile::tempdir().unwrap();
    let (deployment, config) = deployment(&server, dir.path());
    // A request stays in flight while it is attacked.
    let _stages = planner_holds_work(&server, &deployment, &[]);
    let subjects = config.subjects();
    let (alpha, beta) = (connect_as(&server, "alpha").await, connect_as(&server, "beta").await);

    let id = uuid::Uuid::now_v7();
    let asked = {
        let (alpha, subjects) = (alpha.clone(), subjects.clone());
        let request = AskRequest { request_id: Some(id), ..AskRequest::new(QUESTION) };
        tokio::spawn(async move { ask(&alpha, &subjects, request).await })
    };
    let before = state_of(&config, id).await;
    assert_eq!(before.owner, Some(Principal::tenant("ALPHA")), "the request is ALPHA's, as the server said");
    let reply_subject = before.reply.as_ref().map(|r| r.subject.clone()).unwrap_or_default();
    assert!(reply_subject.starts_with("_R_."), "the reply goes through the import's mapping: {reply_subject}");

    // BETA re-sends ALPHA's request id: refused, and the request (its reply subject above all) is left alone.
    let resent = ask(&beta, &subjects, AskRequest { request_id: Some(id), ..AskRequest::new("What is in it?") }).await;
    assert_eq!(error_kind(&resent), Some(ErrorKind::InvalidInput), "{resent:?}");

    // BETA cancels it, also claiming to be ALPHA in the header the server vouches with: nothing happens.
    beta.publish(subjects.cancel(id), "".into()).await.unwrap();
    let mut forged = async_nats::HeaderMap::new();
    forged.insert("Nats-Request-Info", r#"{"acc":"ALPHA"}"#);
    beta.publish_with_headers(subjects.cancel(id), forged, "".into()).await.unwrap();
    beta.flush().await.unwrap();
    tokio::time::sleep(Duration::from_millis(1500)).await;
    let after = state_of(&config, id).await;
    assert_eq!(after.phase, Phase::Planning, "BETA's cancel or re-send touched ALPHA's request");
    assert_eq!(after.reply, before.reply);
    assert!(!asked.is_finished(), "ALPHA's request ended early");

    // ALPHA's own cancel works, at once.
    alpha.publish(subjects.cancel(id), "".into()).await.unwrap();
    alpha.flush().await.unwrap();
    let reply = tokio::time::timeout(Duration::from_secs(5), asked).await.expect("cancelled within 5 s").unwrap();
    match &reply.outcome {
        Outcome::Answer(a) => assert_eq!(a.termination_reason, TerminationReason::Cancelled),
        Outcome::Error(e) => panic!("expected the cancelled answer, got {e}"),
    }
    server.assert_no_violations_but(&[]);
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_tenant_sees_nothing_of_another_tenants_requests() {
    let server = nats::with_accounts();
    let dir = tempfile::tempdir().unwrap();
    let (deployment, config) = deployment(&server, dir.path());
    let _all = ServeProcess::start(&deployment, "all", &[("SLEUTH__NATS__URL", &nats::url_as(&server, "sleuth"))]);
    let subjects = config.subjects();
    let (alpha, beta) = (connect_as(&server, "alpha").await, connect_as(&server, "beta").await);
    // Everything BETA's account carries, while ALPHA works.
    let mut snoop = beta.subscribe(">").await.unwrap();
    beta.flush().await.unwrap();

    // `sleuth ask` as a tenant's user, unchanged: the tenant comes from the credentials.
    let cli = run_cli(&deployment, &["ask", QUESTION], &[("SLEUTH__NATS__URL", &nats::url_as(&server, "alpha"))]);
    let stdout = String::from_utf8_lossy(&cli.stdout);
    assert!(cli.status.success(), "ask as alpha: {stdout}\n{}", String::from_utf8_lossy(&cli.stderr));
    assert!(stdout.contains("One Piece"), "{stdout}");

    let id = uuid::Uuid::now_v7();
    let conversation = Some("shared-name".to_string());
    let first = AskRequest { request_id: Some(id), conversation_id: conversation.clone(), ..AskRequest::new(QUESTION) };
    let mut kinds = Vec::new();
    let reply = {
        let mut on_event = |e: &sleuth_messages::Event| kinds.push(e.kind);
        let timeout = Duration::from_secs(60);
        client::ask_with(&alpha, &subjects, first, timeout, Some(&mut on_event), &Default::default()).await.unwrap()
    };
    assert!(matches!(reply.outcome, Outcome::Answer(_)), "{reply:?}");
    // ALPHA follows its own request's progress: its events export, imported as sleuth.v1.events.> (the final
    // event is also made from the reply, so the earlier ones are what crossed the import).
    assert!(kinds.contains(&EventKind::Accepted) && kinds.contains(&EventKind::Planned), "{kinds:?}");
    let done = state_of(&config, id).await;
    assert_eq!(done.owner, Some(Principal::tenant("ALPHA")));

    // A body that claims a tenant, and a forged request-info header: the request is still BETA's.
    let claimed = uuid::Uuid::now_v7();
    let body = serde_json::json!({ "query": QUESTION, "request_id": claimed, "tenant": "ALPHA" });
    let mut forged = async_nats::HeaderMap::new();
    forged.insert("Nats-Request-Info", r#"{"acc":"ALPHA","user":"alpha"}"#);
    let inbox = beta.new_inbox();
    let mut replies = beta.subscribe(inbox.clone()).await.unwrap();
    let body = bytes::Bytes::from(serde_json::to_vec(&body).unwrap());
    beta.publish_with_reply_and_headers(subjects.ask(), inbox, forged, body).await.unwrap();
    tokio::time::timeout(Duration::from_secs(30), replies.next()).await.expect("BETA's answer").unwrap();
    assert_eq!(state_of(&config, claimed).await.owner, Some(Principal::tenant("BETA")));

    // An oversized `baggage` (100 KB, under the account's 1 MiB payload limit): the request is answered, and the
    // header, over W3C's 8,192 bytes, is not copied into the loop state, which stays loadable.
    let heavy = uuid::Uuid::now_v7();
    let mut headers = async_nats::HeaderMap::new();
    headers.insert("baggage", format!("k={}", "v".repeat(100_000)).as_str());
    let body = serde_json::json!({ "query": QUESTION, "request_id": heavy });
    let inbox = beta.new_inbox();
    let mut replies = beta.subscribe(inbox.clone()).await.unwrap();
    let body = bytes::Bytes::from(serde_json::to_vec(&body).unwrap());
    beta.publish_with_reply_and_headers(subjects.ask(), inbox, headers, body).await.unwrap();
    let reply = tokio::time::timeout(Duration::from_secs(30), replies.next()).await.expect("an answer").unwrap();
    let reply: AskReply = codec::decode(&reply.payload).expect("a reply").0;
    assert!(matches!(reply.outcome, Outcome::Answer(_)), "{reply:?}");
    let stored = state_of(&config, heavy).await;
    assert!(
        stored.baggage.as_ref().is_none_or(|b| b.len() <= 8192),
        "baggage of {:?} bytes",
        stored.baggage.map(|b| b.len())
    );

    // BETA follows up in a conversation of the same name: it starts its own, and ALPHA's keeps only ALPHA's turn.
    let follow = AskRequest { conversation_id: conversation, ..AskRequest::new("Who created it?") };
    ask(&beta, &subjects, follow).await;
    let admin = async_nats::jetstream::new(connect_as(&server, "admin").await);
    let conversations = admin.get_key_value(subjects.conversations_bucket()).await.unwrap();
    let turns = |key: &'static str| {
        let conversations = conversations.clone();
        async move {
            let bytes = conversations.get(key).await.unwrap().unwrap_or_else(|| panic!("no conversation {key}"));
            codec::decode::<Conversation>(&bytes).unwrap().0.turns
        }
    };
    let alphas = turns("ALPHA/shared-name").await;
    assert_eq!(alphas.iter().map(|t| t.request_id).collect::<Vec<_>>(), vec![id]);
    assert_eq!(turns("BETA/shared-name").await.len(), 1);

    // A reply subject aimed at ALPHA's loop state: inside BETA's account it is only BETA's own subject, and the
    // server hands sleuth its import's reply subject instead.
    // (The answer to it arrives on BETA's own subject of that name, in BETA's account.)
    let aimed = subjects.loop_state(id);
    beta.publish_with_reply(subjects.ask(), aimed.clone(), br#"{"query":"Who is Luffy?"}"#.as_slice().into())
        .await
        .unwrap();
    beta.flush().await.unwrap();
    tokio::time::sleep(Duration::from_secs(3)).await;
    assert_eq!(stored_state(&config, id).await.as_ref(), Some(&done), "ALPHA's finished state changed");

    // Nothing of ALPHA's request crossed into BETA's account: not its reply, not its events.
    let (text, raw) = (id.to_string(), id.as_bytes().to_vec());
    while let Ok(Some(message)) = tokio::time::timeout(Duration::from_millis(500), snoop.next()).await {
        let payload = &message.payload[..];
        let leaked = (message.subject.contains(&text) && message.subject.as_str() != aimed)
            || payload.windows(text.len()).any(|w| w == text.as_bytes())
            || payload.windows(raw.len()).any(|w| w == raw.as_slice());
        assert!(!leaked, "BETA received ALPHA's request on {}", message.subject);
    }
    server.assert_no_violations_but(&[]);
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_tenant_at_its_limit_is_refused_with_limited_while_another_is_not() {
    let server = nats::with_accounts();
    let dir = tempfile::tempdir().unwrap();
    let (deployment, config) = deployment(&server, dir.path());
    // BETA may have one request under way (the name as an environment variable writes it: lowercased).
    let _stages = planner_holds_work(&server, &deployment, &[("SLEUTH__TENANTS__OVERRIDES__BETA__MAX_UNDER_WAY", "1")]);
    let subjects = config.subjects();
    let (alpha, beta) = (connect_as(&server, "alpha").await, connect_as(&server, "beta").await);
    let in_flight = |client: &async_nats::Client, id: uuid::Uuid| {
        let (client, subjects) = (client.clone(), subjects.clone());
        let request = AskRequest { request_id: Some(id), ..AskRequest::new(QUESTION) };
        tokio::spawn(async move { ask(&client, &subjects, request).await })
    };

    let first = uuid::Uuid::now_v7();
    let beta_first = in_flight(&beta, first);
    assert_eq!(state_of(&config, first).await.owner, Some(Principal::tenant("BETA")));
    let started = Instant::now();
    let refused = ask(&beta, &subjects, AskRequest::new(QUESTION)).await;
    assert_eq!(error_kind(&refused), Some(ErrorKind::Limited), "{refused:?}");
    assert!(started.elapsed() < Duration::from_secs(5), "refused at once, not after the planner's delay");
    match &refused.outcome {
        Outcome::Error(e) => assert!(e.retryable && e.message.contains("max_under_way"), "{e}"),
        Outcome::Answer(_) => unreachable!(),
    }
    // ALPHA has its own count: admitted while BETA is at its limit.
    let alphas = uuid::Uuid::now_v7();
    let alpha_asked = in_flight(&alpha, alphas);
    assert_eq!(state_of(&config, alphas).await.owner, Some(Principal::tenant("ALPHA")));

    // BETA's request ends (its own cancel): its slot is free again, and the next request is admitted.
    beta.publish(subjects.cancel(first), "".into()).await.unwrap();
    beta.flush().await.unwrap();
    let ended = tokio::time::timeout(Duration::from_secs(5), beta_first).await.expect("cancelled within 5 s").unwrap();
    assert!(matches!(ended.outcome, Outcome::Answer(_)), "{ended:?}");
    // Intake looks a tenant's requests up at most every tenth of a second (`tenancy::quota::SWEEP_EVERY`).
    tokio::time::sleep(sleuth_actors::tenancy::quota::SWEEP_EVERY * 2).await;
    let next = uuid::Uuid::now_v7();
    let beta_next = in_flight(&beta, next);
    assert_eq!(state_of(&config, next).await.owner, Some(Principal::tenant("BETA")), "the freed slot is used");
    for (client, id) in [(&alpha, alphas), (&beta, next)] {
        client.publish(subjects.cancel(id), "".into()).await.unwrap();
        client.flush().await.unwrap();
    }
    for asked in [alpha_asked, beta_next] {
        let reply = tokio::time::timeout(Duration::from_secs(5), asked).await.expect("cancelled within 5 s").unwrap();
        assert!(matches!(reply.outcome, Outcome::Answer(_)), "{reply:?}");
    }
    server.assert_no_violations_but(&[]);
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn two_intake_replicas_hold_a_tenant_to_one_limit() {
    let server = nats::with_accounts();
    let dir = tempfile::tempdir().unwrap();
    let (deployment, config) = deployment(&server, dir.path());
    let limit = ("SLEUTH__TENANTS__OVERRIDES__BETA__MAX_UNDER_WAY", "1");
    let _stages = planner_holds_work(&server, &deployment, &[limit]);
    // A second intake replica in the same queue group, as the deploy files' intake user.
    let intake = nats::url_as(&server, "intake");
    let _second = ServeProcess::start(&deployment, "intake", &[("SLEUTH__NATS__URL", intake.as_str()), limit]);
    let subjects = config.subjects();
    let beta = connect_as(&server, "beta").await;

    let first = uuid::Uuid::now_v7();
    let held = {
        let (beta, subjects) = (beta.clone(), subjects.clone());
        let request = AskRequest { request_id: Some(first), ..AskRequest::new(QUESTION) };
        tokio::spawn(async move { ask(&beta, &subjects, request).await })
    };
    state_of(&config, first).await;
    // nats-server hands each ask to either replica at random: counting apart, the one that admitted nothing would
    // take about half of these (all eight on one replica: 1 in 256).
    // A refusal is immediate; an admitted request would sit 20 s at the planner.
    let (within, trace) = (Duration::from_secs(5), Default::default());
    for attempt in 0..8 {
        let asked = client::ask_with(&beta, &subjects, AskRequest::new(QUESTION), within, None, &trace);
        let refused = asked.await.unwrap_or_else(|e| panic!("ask {attempt} was admitted, not refused: {e:#}"));
        assert_eq!(error_kind(&refused), Some(ErrorKind::Limited), "ask {attempt}: {refused:?}");
    }
    beta.publish(subjects.cancel(first), "".into()).await.unwrap();
    beta.flush().await.unwrap();
    let ended = tokio::time::timeout(Duration::from_secs(5), held).await.expect("cancelled within 5 s").unwrap();
    assert!(matches!(ended.outcome, Outcome::Answer(_)), "{ended:?}");
    server.assert_no_violations_but(&[]);
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_tenants_documents_answer_only_that_tenant() {
    let server = nats::with_accounts();
    let dir = tempfile::tempdir().unwrap();
    let (deployment, config) = deployment(&server, dir.path());
    // ALPHA's own document, ingested before the stages open the index (its one owner).
    let file = dir.path().join("alpha.jsonl");
    let line = serde_json::json!({"id": "alpha-vault", "title": "Zephyr Vault",
        "text": "The Zephyr Vault door code is 4471. The Zephyr Vault was built in 1902."});
    std::fs::write(&file, line.to_string()).unwrap();
    let admin = nats::url_as(&server, "admin");
    let file = file.to_string_lossy().to_string();
    let ingested =
        run_cli(&deployment, &["ingest", "docs", &file, "--tenant", "ALPHA"], &[("SLEUTH__NATS__URL", &admin)]);
    assert!(ingested.status.success(), "ingest as ALPHA: {}", String::from_utf8_lossy(&ingested.stderr));
    let _all = ServeProcess::start(&deployment, "all", &[("SLEUTH__NATS__URL", &nats::url_as(&server, "sleuth"))]);
    let subjects = config.subjects();
    let (alpha, beta) = (connect_as(&server, "alpha").await, connect_as(&server, "beta").await);
    let vault = "What is the Zephyr Vault door code?";
    let text = |reply: &AskReply| serde_json::to_string(reply).unwrap();
    // ALPHA first: its hits are in the retrieve stage's cache when BETA asks the same.
    let reply = ask(&alpha, &subjects, AskRequest::new(vault)).await;
    assert!(text(&reply).contains("4471"), "ALPHA reads its own document: {reply:?}");
    let reply = ask(&beta, &subjects, AskRequest::new(vault)).await;
    assert!(matches!(reply.outcome, Outcome::Answer(_)), "{reply:?}");
    assert!(!text(&reply).contains("4471") && !text(&reply).contains("1902"), "BETA read ALPHA's document: {reply:?}");
    // sleuth's own account (the `client` user) is no tenant: shared documents only.
    let client = connect_as(&server, "client").await;
    let reply = ask(&client, &subjects, AskRequest::new(vault)).await;
    assert!(!text(&reply).contains("4471"), "the deployment's own account read ALPHA's document: {reply:?}");
    server.assert_no_violations_but(&[]);
}

/// The fast lanes, imported by every tenant: typeahead and hydrate answer a tenant with what it may read. As
/// `beta`, ALPHA's entity is neither found by name nor hydrated by id, not even with a forged `Nats-Request-Info`
/// naming ALPHA (the server replaces it on the import); as `alpha`, both find it.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_tenant_finds_and_hydrates_only_the_entities_it_may_read() {
    let server = nats::with_accounts();
    let dir = tempfile::tempdir().unwrap();
    let (deployment, config) = deployment(&server, dir.path());
    let (entities, edges) = (dir.path().join("alpha.jsonl"), dir.path().join("edges.jsonl"));
    let line = serde_json::json!({"id": "character:zorblax", "type": "character", "name": "Zorblax Quint"});
    std::fs::write(&entities, line.to_string()).unwrap();
    std::fs::write(&edges, "").unwrap();
    let admin = nats::url_as(&server, "admin");
    let (entities, edges) = (entities.to_string_lossy().to_string(), edges.to_string_lossy().to_string());
    let ingested = run_cli(
        &deployment,
        &["ingest", "graph", &entities, &edges, "--tenant", "ALPHA"],
        &[("SLEUTH__NATS__URL", &admin)],
    );
    assert!(ingested.status.success(), "ingest graph as ALPHA: {}", String::from_utf8_lossy(&ingested.stderr));
    let _graph = ServeProcess::start(&deployment, "graph", &[("SLEUTH__NATS__URL", &nats::url_as(&server, "graph"))]);
    let subjects = config.subjects();
    let (alpha, beta) = (connect_as(&server, "alpha").await, connect_as(&server, "beta").await);
    let search = sleuth_messages::SearchRequest { text: "zorb".into(), entity_type: None, limit: None };
    let names = |reply: &sleuth_messages::EntitiesReply| -> Vec<String> {
        assert!(reply.error.is_none(), "{reply:?}");
        reply.entities.iter().map(|e| e.name.clone()).collect()
    };

    let found = client::lane(&alpha, subjects.search(), &search, None).await.expect("alpha's search");
    assert_eq!(names(&found), ["Zorblax Quint"], "ALPHA finds its own entity");
    let ids: Vec<sleuth_messages::EntityRef> = found.entities.iter().map(|e| e.entity.clone()).collect();
    let hydrate = sleuth_messages::HydrateRequest { ids };
    let hydrated = client::lane(&alpha, subjects.hydrate(), &hydrate, None).await.expect("alpha's hydrate");
    assert_eq!(names(&hydrated), ["Zorblax Quint"]);

    let forged = Principal::tenant("ALPHA");
    for claim in [None, Some(&forged)] {
        let found = client::lane(&beta, subjects.search(), &search, claim).await.expect("beta's search");
        assert!(names(&found).is_empty(), "BETA found ALPHA's entity (claiming {claim:?}): {found:?}");
        let hydrated = client::lane(&beta, subjects.hydrate(), &hydrate, claim).await.expect("beta's hydrate");
        assert!(names(&hydrated).is_empty(), "BETA hydrated ALPHA's entity (claiming {claim:?}): {hydrated:?}");
    }
    server.assert_no_violations_but(&[]);
}
