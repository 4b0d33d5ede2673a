//! A stand-in for Jaeger's OTLP/gRPC port on a machine without one: counts the spans it receives on an address
//! (default 127.0.0.1:4317) and prints the counts per service every second. Used to measure export overhead
//! (`BENCHMARKS.md`): `cargo run --release -p sleuth-tests --example otlp_sink -- 127.0.0.1:4317`.

use std::time::Duration;

#[tokio::main]
async fn main() {
    let addr = std::env::args().nth(1).unwrap_or_else(|| "127.0.0.1:4317".into());
    let collector = sleuth_tests::otlp::Collector::counting_on(&addr).await;
    eprintln!("counting spans received on {}", collector.endpoint);
    let mut last = 0;
    loop {
        tokio::time::sleep(Duration::from_secs(1)).await;
        let counts = collector.counts();
        let total: usize = counts.values().sum();
        if total != last {
            eprintln!("{total} spans: {counts:?}");
            last = total;
        }
    }
}
