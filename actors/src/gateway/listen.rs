//! The gateway's accept loop: HTTP/1.1 connections served by hyper with a timer, so a client that opens a
//! connection and sends no complete request head within `gateway.idle_timeout_ms` (a slowloris, or a keep-alive
//! connection left idle) is closed. `axum::serve` gives hyper no timer, hence no such timeout.

use std::time::Duration;

use axum::Router;
use hyper_util::{
    rt::{TokioIo, TokioTimer},
    service::TowerToHyperService,
};
use tokio::net::TcpListener;

/// Serves `app` on `listener` until the task running it is aborted.
pub async fn serve(listener: TcpListener, app: Router, idle: Duration) {
    loop {
        let stream = match listener.accept().await {
            Ok((stream, _)) => stream,
            Err(e) => {
                // Out of file descriptors or a connection reset before it was accepted: wait a moment rather
                // than spin, as hyper's and axum's own loops do.
                tracing::warn!(error = %e, "the gateway cannot accept a connection");
                tokio::time::sleep(Duration::from_millis(50)).await;
                continue;
            }
        };
        let _ = stream.set_nodelay(true);
        let service = TowerToHyperService::new(app.clone());
        tokio::spawn(async move {
            let mut http = hyper::server::conn::http1::Builder::new();
            http.timer(TokioTimer::new()).header_read_timeout(idle);
            if let Err(e) = http.serve_connection(TokioIo::new(stream), service).with_upgrades().await {
                tracing::debug!(error = %e, "a gateway connection ended");
            }
        });
    }
}
