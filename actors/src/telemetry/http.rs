//! The HTTP side of a serving process: `/metrics` (Prometheus text format), `/healthz` (the process is alive:
//! none of the loops it cannot work without has stopped) and `/readyz` (it can take work: connected to NATS,
//! backends open, not draining). Kubernetes probes and Prometheus scrape these.

use std::{
    net::SocketAddr,
    sync::{
        Arc, Mutex,
        atomic::{AtomicBool, Ordering},
    },
};

use anyhow::Context;
use axum::{Router, extract::State, http::StatusCode, response::IntoResponse, routing::get};
use tokio::task::JoinHandle;

type Check = Box<dyn Fn() -> Result<(), String> + Send + Sync>;
type Collector = Box<dyn Fn() + Send + Sync>;

/// Readiness of this process, and what to refresh before a scrape.
#[derive(Default)]
pub struct Health {
    started: AtomicBool,
    draining: AtomicBool,
    /// Why the process is not ready yet (e.g. a backend it is still retrying).
    waiting_for: Mutex<Option<String>>,
    checks: Mutex<Vec<Check>>,
    /// Conditions without which the process is stuck, whatever its connections: `/healthz` fails on any.
    vital: Mutex<Vec<Check>>,
    collectors: Mutex<Vec<Collector>>,
}

impl Health {
    /// All stages are consuming.
    pub fn set_started(&self) {
        self.started.store(true, Ordering::SeqCst);
        *self.waiting_for.lock().unwrap_or_else(|e| e.into_inner()) = None;
    }

    /// Not ready yet, and why (shown by `/readyz`).
    pub fn set_waiting(&self, why: impl Into<String>) {
        *self.waiting_for.lock().unwrap_or_else(|e| e.into_inner()) = Some(why.into());
    }

    /// Shutting down: take no new work.
    pub fn set_draining(&self) {
        self.draining.store(true, Ordering::SeqCst);
    }

    /// A condition `/readyz` checks on every probe, e.g. the NATS connection.
    pub fn add_check(&self, check: impl Fn() -> Result<(), String> + Send + Sync + 'static) {
        self.checks.lock().unwrap_or_else(|e| e.into_inner()).push(Box::new(check));
    }

    /// A condition `/healthz` checks on every probe: when it fails the process is stuck and only a restart helps,
    /// e.g. its deadline watchdog has stopped.
    pub fn add_vital(&self, check: impl Fn() -> Result<(), String> + Send + Sync + 'static) {
        self.vital.lock().unwrap_or_else(|e| e.into_inner()).push(Box::new(check));
    }

    /// `Ok` while the process is alive, or what it is stuck on.
    pub fn liveness(&self) -> Result<(), String> {
        all_pass(&self.vital)
    }

    /// Runs before every `/metrics` render, to copy counters kept elsewhere into the registry.
    pub fn add_collector(&self, collect: impl Fn() + Send + Sync + 'static) {
        self.collectors.lock().unwrap_or_else(|e| e.into_inner()).push(Box::new(collect));
    }

    /// `Ok` when the process can take work, or the reason it cannot.
    pub fn readiness(&self) -> Result<(), String> {
        if self.draining.load(Ordering::SeqCst) {
            return Err("draining: shutting down".into());
        }
        if !self.started.load(Ordering::SeqCst) {
            let why = self.waiting_for.lock().unwrap_or_else(|e| e.into_inner()).clone();
            return Err(why.unwrap_or_else(|| "starting".into()));
        }
        all_pass(&self.checks)
    }

    fn collect(&self) {
        for collect in self.collectors.lock().unwrap_or_else(|e| e.into_inner()).iter() {
            collect();
        }
    }
}

/// `Ok` when every check passes, or the first failure.
fn all_pass(checks: &Mutex<Vec<Check>>) -> Result<(), String> {
    checks.lock().unwrap_or_else(|e| e.into_inner()).iter().try_for_each(|check| check())
}

async fn metrics(State(health): State<Arc<Health>>) -> impl IntoResponse {
    health.collect();
    match super::metrics::render() {
        Some(text) => (StatusCode::OK, [("content-type", "text/plain; version=0.0.4")], text),
        None => (StatusCode::SERVICE_UNAVAILABLE, [("content-type", "text/plain")], "no metrics recorder\n".into()),
    }
}

async fn healthz(State(health): State<Arc<Health>>) -> (StatusCode, String) {
    match health.liveness() {
        Ok(()) => (StatusCode::OK, "ok\n".into()),
        Err(why) => (StatusCode::SERVICE_UNAVAILABLE, format!("stuck: {why}\n")),
    }
}

async fn readyz(State(health): State<Arc<Health>>) -> (StatusCode, String) {
    match health.readiness() {
        Ok(()) => (StatusCode::OK, "ready\n".into()),
        Err(why) => (StatusCode::SERVICE_UNAVAILABLE, format!("not ready: {why}\n")),
    }
}

/// Binds `addr` and serves until the task is aborted. Returns the bound address (port 0 picks one).
pub async fn serve(addr: &str, health: Arc<Health>) -> anyhow::Result<(SocketAddr, JoinHandle<()>)> {
    super::metrics::install()?;
    let listener = tokio::net::TcpListener::bind(addr)
        .await
        .with_context(|| format!("cannot listen on telemetry.http_addr {addr} for /metrics, /healthz and /readyz"))?;
    let bound = listener.local_addr()?;
    let app = Router::new()
        .route("/metrics", get(metrics))
        .route("/healthz", get(healthz))
        .route("/readyz", get(readyz))
        .with_state(health);
    let task = tokio::spawn(async move {
        if let Err(e) = axum::serve(listener, app).await {
            tracing::error!(error = %e, "the metrics and health server stopped");
        }
    });
    Ok((bound, task))
}

/// `sleuth healthcheck`: asks the serving process on `addr` (this container's `telemetry.http_addr`) whether it
/// is ready, for container runtimes whose image has no curl. A wildcard address is asked on loopback.
pub async fn probe(addr: &str) -> anyhow::Result<String> {
    let mut target: SocketAddr =
        addr.parse().with_context(|| format!("telemetry.http_addr {addr:?} is not an address like 0.0.0.0:9464"))?;
    if target.ip().is_unspecified() {
        target.set_ip(std::net::Ipv4Addr::LOCALHOST.into());
    }
    let url = format!("http://{target}/readyz");
    let response = reqwest::Client::new()
        .get(&url)
        .timeout(std::time::Duration::from_secs(3))
        .send()
        .await
        .with_context(|| format!("nothing answers on {url}: is `sleuth serve` running with this config?"))?;
    let status = response.status();
    let body = response.text().await.unwrap_or_default();
    anyhow::ensure!(status.is_success(), "{url}: {status}: {}", body.trim());
    Ok(body.trim().to_string())
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn readiness_follows_start_checks_and_drain() {
        let health = Health::default();
        health.set_waiting("connecting to postgres");
        assert_eq!(health.readiness(), Err("connecting to postgres".into()));
        health.set_started();
        assert_eq!(health.readiness(), Ok(()));
        let up = Arc::new(AtomicBool::new(false));
        let flag = up.clone();
        health.add_check(move || if flag.load(Ordering::SeqCst) { Ok(()) } else { Err("nats disconnected".into()) });
        assert_eq!(health.readiness(), Err("nats disconnected".into()));
        up.store(true, Ordering::SeqCst);
        assert_eq!(health.readiness(), Ok(()));
        health.set_draining();
        assert!(health.readiness().unwrap_err().starts_with("draining"));
    }

    #[test]
    fn liveness_fails_once_a_vital_condition_does() {
        let health = Health::default();
        assert_eq!(health.liveness(), Ok(()));
        let stopped = Arc::new(AtomicBool::new(false));
        let flag = stopped.clone();
        health.add_vital(move || if flag.load(Ordering::SeqCst) { Err("the watchdog stopped".into()) } else { Ok(()) });
        assert_eq!(health.liveness(), Ok(()));
        stopped.store(true, Ordering::SeqCst);
        assert_eq!(health.liveness(), Err("the watchdog stopped".into()));
        assert_eq!(health.readiness(), Err("starting".into()), "liveness is not readiness");
    }
}
