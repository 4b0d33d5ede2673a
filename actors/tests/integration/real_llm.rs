//! The LLM path against a real OpenAI-compatible server, not a scripted one: `SLEUTH_TEST_LLM_URL` (with `/v1`),
//! which `.ci/run` sets after starting `../shared/tools/llm-server.sh` (llama-cpp-python and a small model).
//! `auto` finds the structured-output mode the server follows; on the agent route the rewriter, planner, grader
//! and synthesizer answer or fall back with a counted reason, within the request's deadline, and no answer cites
//! a card that was not retrieved. What the model writes is not judged: a small model is often wrong.

use std::time::{Duration, Instant};

use sleuth_actors::{
    config::{Config, EmbedderKind, LlmConfig, StructuredOutput},
    llm::{Agent, ChatMessage, LlmClient, LlmError, structured},
    node::Node,
};
use sleuth_messages::{AskRequest, Backend, LlmSpend, LoopState, NextStep, Outcome, Route};

const NEEDS: &str =
    "needs a real OpenAI-compatible server in SLEUTH_TEST_LLM_URL (.ci/run starts ../shared/tools/llm-server.sh)";

fn url() -> String {
    std::env::var("SLEUTH_TEST_LLM_URL").unwrap_or_else(|_| {
        panic!(
            "SLEUTH_TEST_LLM_URL is not set: start ../shared/tools/llm-server.sh and set it to http://127.0.0.1:8765/v1"
        )
    })
}

fn llm_config() -> LlmConfig {
    LlmConfig {
        base_url: Some(url()),
        model: std::env::var("SLEUTH_TEST_LLM_MODEL").unwrap_or_else(|_| "local".into()),
        api_key_env: "SLEUTH_TEST_NO_SUCH_KEY".into(),
        timeout_ms: 60_000,
        max_tokens: 384,
        ..LlmConfig::default()
    }
}

#[tokio::test]
#[ignore = "needs a real OpenAI-compatible server in SLEUTH_TEST_LLM_URL (.ci/run starts ../shared/tools/llm-server.sh)"]
async fn auto_settles_on_a_mode_the_real_server_follows_and_keeps_it() {
    let client = LlmClient::from_config(&llm_config()).unwrap().expect(NEEDS);
    let messages = vec![
        ChatMessage::system(sleuth_actors::llm::prompts::STEP),
        ChatMessage::user("Question: Which anime is Luffy in?\nNo documents have been retrieved yet."),
    ];
    let out = structured::ask::<NextStep>(&client, Agent::Planner, messages.clone(), 2, &|_| Ok(())).await;
    let mode = client.structured_output().expect("the first schema ask probed the endpoint");
    assert_ne!(mode, StructuredOutput::Auto);
    eprintln!(
        "auto chose {}; the ask gave {:?} after {} repairs",
        mode.as_str(),
        out.result.as_ref().map(|_| "a step"),
        out.usage.repairs
    );
    // Whatever the model wrote, the ask ended in a validated step or a typed error: never a crash or a hang.
    assert!(out.usage.calls >= 1, "the server answered");
    match &out.result {
        Ok(step) => assert!(step.validate().is_ok()),
        Err(LlmError::Invalid { attempts, .. }) => assert_eq!(*attempts, 3),
        Err(e) => panic!("the server should have answered: {e}"),
    }
    // A second ask does not probe again (the mode is kept), and the modes named explicitly are each either taken
    // or refused with a typed error, never a hang.
    let again = structured::ask::<NextStep>(&client, Agent::Planner, messages.clone(), 0, &|_| Ok(())).await;
    assert_eq!(client.structured_output(), Some(mode));
    assert!(again.usage.calls >= 1);
    for mode in StructuredOutput::PROBED {
        let client = LlmClient::from_config(&LlmConfig { structured_output: mode, ..llm_config() }).unwrap().unwrap();
        let out = structured::ask::<NextStep>(&client, Agent::Planner, messages.clone(), 0, &|_| Ok(())).await;
        let what = match &out.result {
            Ok(_) => "a valid step".to_string(),
            Err(e) => e.to_string(),
        };
        eprintln!("{}: {what}", mode.as_str());
        // A mode the server does not take is an error the agents fall back on (llama-cpp-python answers
        // `json_schema` with a 500, which is retried, then `Unavailable`), never a hang or an open circuit.
        assert!(!matches!(out.result, Err(LlmError::CircuitOpen)), "{what}");
    }
}

fn config(dir: &std::path::Path) -> Config {
    let mut config = Config { data_dir: Some(dir.to_path_buf()), ..Config::default() };
    config.embedder.kind = EmbedderKind::None;
    config.graph.demo_graph = false;
    config.llm = llm_config();
    config.intake.force_route = Some(Route::Agent);
    config.loop_.timeout_ms = 60_000;
    config
}

/// What every answer must hold to, whatever the model wrote.
fn check(state: &LoopState, started: Instant) {
    let answer = match &state.outcome {
        Some(Outcome::Answer(a)) => a,
        other => panic!("{}: expected an answer, got {other:?}", state.request.query),
    };
    for c in &answer.citations {
        assert!(
            state.cards.iter().any(|card| card.n == c.card && card.hit.doc_id == c.doc_id),
            "{}: citation {c:?} names no retrieved card",
            state.request.query
        );
    }
    let spend = LlmSpend::of(&state.counters).expect("the model was asked");
    assert!(spend.calls >= 1 || spend.fallbacks >= 1, "{spend:?}");
    if spend.fallbacks > 0 {
        let d = answer.degraded.iter().find(|d| d.backend == Backend::Llm);
        assert!(d.is_some_and(|d| !d.reason.is_empty()), "a fallback says why: {:?}", answer.degraded);
    }
    let allowed = Duration::from_millis(state.deadline_ms.saturating_sub(state.created_ms)) + Duration::from_secs(5);
    assert!(started.elapsed() <= allowed, "{}: {:?} past the deadline", state.request.query, started.elapsed());
    eprintln!(
        "{} → {:?} [{} calls, {} in, {} out, {} repaired, {} fell back, {:.1} s]",
        state.request.query,
        answer.answer,
        spend.calls,
        spend.input_tokens,
        spend.output_tokens,
        spend.repairs,
        spend.fallbacks,
        started.elapsed().as_secs_f64()
    );
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
#[ignore = "needs a real OpenAI-compatible server in SLEUTH_TEST_LLM_URL (.ci/run starts ../shared/tools/llm-server.sh)"]
async fn every_llm_agent_answers_or_falls_back_within_the_deadline_against_a_real_model() {
    let dir = tempfile::tempdir().unwrap();
    let node = Node::embedded(config(dir.path())).await.expect("embedded node");
    let ask = |question: &'static str| {
        let node = &node;
        async move {
            let started = Instant::now();
            let request = AskRequest { conversation_id: Some("real-llm".into()), ..AskRequest::new(question) };
            let reply = node.ask(request, None).await.expect("a reply");
            let state = node.ctx.store.load(reply.request_id.unwrap()).await.unwrap().unwrap().0;
            check(&state, started);
            state
        }
    };
    // The planner (plan and steps), the grader and the synthesizer on the agent route; then a follow-up, which the
    // rewriter turns into a question of its own.
    let first = ask("Which anime is Luffy in?").await;
    assert!(first.plan.is_some(), "the agent route plans");
    ask("Where was the creator of One Piece born?").await;
    let follow_up = ask("and who produced its anime?").await;
    assert!(
        follow_up.counters.llm_calls > 0 || follow_up.counters.llm_fallbacks > 0,
        "the rewriter and the agents were asked: {:?}",
        follow_up.counters
    );
    node.shutdown().await;
}
