//! The HTTP gateway as a user starts it: `sleuth serve --embedded` on a copy of the seeded demo data, and the
//! requests, event streams and answers the gateway tests read from it.

use std::{
    io::{BufRead, BufReader},
    path::Path,
    process::{Child, Command, Stdio},
    sync::mpsc,
    time::Duration,
};

use serde_json::Value;

use crate::process::sleuth_bin;

/// A running `sleuth serve --embedded`; dropping it kills it.
pub struct Gateway {
    child: Option<Child>,
    pub base: String,
    /// The process's `/metrics`, `/healthz` and `/readyz` address, `http://host:port`.
    pub telemetry: String,
}

impl Drop for Gateway {
    fn drop(&mut self) {
        if let Some(child) = &mut self.child {
            let _ = child.kill();
            let _ = child.wait();
        }
    }
}

impl Gateway {
    /// Starts the embedded server on a copy of the demo data with `env`, and waits until it serves.
    pub fn start(data_dir: &Path, env: &[(&str, &str)]) -> Gateway {
        crate::seeded::seed_data_dir(data_dir);
        let mut cmd = Command::new(sleuth_bin());
        cmd.args(["serve", "--embedded"])
            .env_remove("SLEUTH_CONFIG")
            .env_remove("SLEUTH__NATS__URL")
            .env_remove("NATS_URL")
            .env("SLEUTH__DATA_DIR", data_dir)
            .env("SLEUTH__GATEWAY__HTTP_ADDR", "127.0.0.1:0")
            .env("RUST_LOG", "info")
            .stdout(Stdio::null())
            .stderr(Stdio::piped());
        for (k, v) in env {
            cmd.env(k, v);
        }
        let mut child = cmd.spawn().expect("start sleuth serve --embedded");
        let stderr = child.stderr.take().expect("piped stderr");
        let (tx, rx) = mpsc::channel::<Result<(String, String), String>>();
        std::thread::spawn(move || {
            let mut base = None;
            let mut telemetry = String::new();
            let mut seen = Vec::new();
            for line in BufReader::new(stderr).lines().map_while(Result::ok) {
                if let Some(at) = line.find("gateway on http://") {
                    let addr = line[at + "gateway on http://".len()..].split('/').next().unwrap_or_default();
                    base = Some(format!("http://{addr}"));
                }
                if let Some(at) = line.find("metrics on http://") {
                    let addr = line[at + "metrics on http://".len()..].split('/').next().unwrap_or_default();
                    telemetry = format!("http://{addr}");
                }
                if line.contains("serving; ctrl-c")
                    && let Some(base) = base.take()
                {
                    let _ = tx.send(Ok((base, telemetry.clone())));
                }
                if std::env::var_os("SLEUTH_TEST_LOGS").is_some() {
                    eprintln!("[gateway] {line}");
                }
                seen.push(line);
            }
            let _ = tx.send(Err(seen.join("\n")));
        });
        match rx.recv_timeout(Duration::from_secs(90)) {
            Ok(Ok((base, telemetry))) => Gateway { child: Some(child), base, telemetry },
            Ok(Err(lines)) => panic!("sleuth serve --embedded exited before serving:\n{lines}"),
            Err(_) => panic!("sleuth serve --embedded did not serve within 90 s"),
        }
    }

    /// A gateway some other process serves at `base` (`http://host:port`), without a telemetry address.
    pub fn at(base: String) -> Gateway {
        Gateway { child: None, base, telemetry: String::new() }
    }

    pub fn url(&self, path: &str) -> String {
        format!("{}{path}", self.base)
    }
}

/// An HTTP client with a 60 s timeout.
pub fn http() -> reqwest::Client {
    reqwest::Client::builder().timeout(Duration::from_secs(60)).build().expect("http client")
}

/// Sends `body` to `path` with `key` (if any); returns the status and the body as JSON (`Null` when it is not).
pub async fn post(gateway: &Gateway, path: &str, key: Option<&str>, body: &str) -> (u16, Value) {
    let mut request = http().post(gateway.url(path)).header("content-type", "application/json").body(body.to_string());
    if let Some(key) = key {
        request = request.bearer_auth(key);
    }
    let response = request.send().await.expect("POST");
    let status = response.status().as_u16();
    (status, serde_json::from_str(&response.text().await.unwrap_or_default()).unwrap_or(Value::Null))
}

pub async fn send(gateway: &Gateway, method: reqwest::Method, path: &str, key: Option<&str>) -> (u16, Value) {
    let mut request = http().request(method, gateway.url(path));
    if let Some(key) = key {
        request = request.bearer_auth(key);
    }
    let response = request.send().await.expect("request");
    let status = response.status().as_u16();
    (status, serde_json::from_str(&response.text().await.unwrap_or_default()).unwrap_or(Value::Null))
}

/// `POST /v1/ask` asking for the event stream; the response is read by the caller.
pub async fn post_stream(gateway: &Gateway, key: Option<&str>, body: &str) -> reqwest::Response {
    let mut request = http()
        .post(gateway.url("/v1/ask"))
        .header("accept", "text/event-stream")
        .header("content-type", "application/json")
        .body(body.to_string());
    if let Some(key) = key {
        request = request.bearer_auth(key);
    }
    request.send().await.expect("POST stream")
}

/// Waits (up to 10 s) for request `id` to end, and checks that it ended cancelled.
pub async fn assert_cancelled(gateway: &Gateway, id: uuid::Uuid) {
    let path = format!("/v1/requests/{id}");
    let mut last = Value::Null;
    for _ in 0..100 {
        let (_, state) = send(gateway, reqwest::Method::GET, &path, None).await;
        if !state["outcome"].is_null() {
            last = state;
            break;
        }
        tokio::time::sleep(Duration::from_millis(100)).await;
    }
    assert_eq!(last["outcome"]["answer"]["termination_reason"], "cancelled", "the request was not cancelled: {last}");
}

pub fn short_answer(reply: &Value) -> &str {
    reply["outcome"]["answer"]["short_answer"]["text"].as_str().unwrap_or_default()
}

/// The SSE events of a body: (event, data as JSON).
pub fn sse_events(body: &str) -> Vec<(String, Value)> {
    body.split("\n\n")
        .filter_map(|block| {
            let mut event = String::from("message");
            let mut data = String::new();
            for line in block.lines() {
                if let Some(e) = line.strip_prefix("event:") {
                    event = e.trim().to_string();
                } else if let Some(d) = line.strip_prefix("data:") {
                    data.push_str(d.trim_start());
                }
            }
            (!data.is_empty()).then(|| (event, serde_json::from_str(&data).unwrap_or(Value::String(data))))
        })
        .collect()
}
