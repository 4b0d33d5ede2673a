//! Logging and trace context: structured JSON logs when not on a terminal, W3C `traceparent` ids, and the clock.

use std::io::IsTerminal;

use tracing_subscriber::{EnvFilter, fmt};

/// Installs the global subscriber. `RUST_LOG` overrides the default level (`warn` for the CLI, `info` for serve).
pub fn init(default_level: &str) {
    // qdrant-edge logs internal notices at warn level that mean nothing to a sleuth user.
    let filter = EnvFilter::try_from_default_env()
        .unwrap_or_else(|_| EnvFilter::new(format!("{default_level},qdrant_edge=error")));
    let builder = fmt().with_env_filter(filter).with_writer(std::io::stderr);
    let _ = if std::io::stderr().is_terminal() {
        builder.try_init()
    } else {
        builder.json().flatten_event(true).try_init()
    };
}

/// Unix time in milliseconds.
pub fn now_ms() -> u64 {
    std::time::SystemTime::now().duration_since(std::time::UNIX_EPOCH).map(|d| d.as_millis() as u64).unwrap_or(0)
}

/// A fresh W3C trace context: `00-<trace id>-<span id>-01`.
pub fn new_traceparent() -> String {
    let trace: u128 = rand::random::<u128>().max(1);
    let span: u64 = rand::random::<u64>().max(1);
    format!("00-{trace:032x}-{span:016x}-01")
}

#[cfg(test)]
mod tests {
    #[test]
    fn traceparent_has_the_w3c_shape() {
        let tp = super::new_traceparent();
        let parts: Vec<&str> = tp.split('-').collect();
        assert_eq!(parts.len(), 4);
        assert_eq!((parts[0], parts[1].len(), parts[2].len(), parts[3]), ("00", 32, 16, "01"));
    }
}
