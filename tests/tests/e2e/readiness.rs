//! Ready means ready. A cluster is started on a fresh nats-server (new streams, buckets and consumers, as after
//! `docker compose up`) and asked at once, twenty times: the moment `sleuth serve` logs that it is serving,
//! `/readyz` answers 200, every stage answers the `nats micro` ping, the server holds a pull request from every
//! stage's workers, and a question sent once (no re-send) is answered, with no work message redelivered.

use std::time::Duration;

use futures::StreamExt;
use sleuth_messages::{AskReply, AskRequest, Encoding, Outcome, Stage, codec};
use sleuth_tests::{nats::own_nats_server, process::*, unique};

const CLUSTERS: usize = 20;
/// The stages whose work queues a `--stages all` process consumes (intake answers requests instead).
const CONSUMING: [Stage; 5] = [Stage::Planner, Stage::Retrieve, Stage::Graph, Stage::Grader, Stage::Synthesizer];

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_cluster_asked_the_moment_it_is_ready_answers_at_once() {
    for round in 0..CLUSTERS {
        let nats = own_nats_server();
        let dir = tempfile::tempdir().unwrap();
        let deployment = Deployment::seeded(&nats.url, &unique("ready"), dir.path());
        // Returns once the process has logged `serving`.
        let process = ServeProcess::start(&deployment, "all", &[]);
        // First what a slower check would give time to settle: the pull requests.
        let client = async_nats::connect(&nats.url).await.unwrap();
        let config = deployment.config();
        let subjects = config.subjects();
        let js = async_nats::jetstream::new(client.clone());
        let work = js.get_stream(subjects.loops_stream()).await.unwrap();
        for stage in CONSUMING {
            let info = work.consumer_info(subjects.consumer(stage)).await.unwrap();
            assert!(info.num_waiting >= 1, "round {round}: no pull request from the {stage} workers at `serving`");
        }
        let (status, body) = process.get("/readyz").await;
        assert_eq!(status, 200, "round {round}: /readyz right after `serving`: {body}");
        let services = micro_ping(&client).await;
        assert_eq!(services.len(), 6, "round {round}: every stage answers the micro ping: {services:?}");

        let reply = ask_once(&client, &subjects.ask(), "Which anime is Luffy in?").await;
        let reply = reply.unwrap_or_else(|e| panic!("round {round}: {e}\n{}", process.last_lines()));
        assert!(matches!(reply.outcome, Outcome::Answer(_)), "round {round}: {:?}", reply.outcome);
        for stage in CONSUMING {
            let info = work.consumer_info(subjects.consumer(stage)).await.unwrap();
            assert_eq!(info.num_redelivered, 0, "round {round}: {stage} work was redelivered");
        }
    }
}

/// The names of the services that answer `$SRV.PING` within half a second.
async fn micro_ping(client: &async_nats::Client) -> Vec<String> {
    let inbox = client.new_inbox();
    let mut replies = client.subscribe(inbox.clone()).await.unwrap();
    client.publish_with_reply("$SRV.PING", inbox, "".into()).await.unwrap();
    client.flush().await.unwrap();
    let mut names = Vec::new();
    while let Ok(Some(reply)) = tokio::time::timeout(Duration::from_millis(500), replies.next()).await {
        let ping: serde_json::Value = serde_json::from_slice(&reply.payload).unwrap();
        names.push(ping["name"].as_str().unwrap_or_default().to_string());
    }
    names.sort();
    names
}

/// Sends `question` once, as a plain NATS request with no re-send, and waits up to 30 s for the reply.
async fn ask_once(client: &async_nats::Client, subject: &str, question: &str) -> Result<AskReply, String> {
    let payload = codec::encode(&AskRequest::new(question), Encoding::MsgPack).unwrap();
    let request = client.request(subject.to_string(), payload.into());
    let reply = match tokio::time::timeout(Duration::from_secs(30), request).await {
        Err(_) => return Err("no reply within 30 s".into()),
        Ok(Err(e)) => return Err(format!("the question sent once was not taken: {e}")),
        Ok(Ok(reply)) => reply,
    };
    codec::decode::<AskReply>(&reply.payload).map(|(r, _)| r).map_err(|e| format!("undecodable reply: {e}"))
}
