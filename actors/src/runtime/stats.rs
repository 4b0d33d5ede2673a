//! [`Stats`]: the runtime's counters per stage. One call increments both the in-process counter (read by tests
//! and `nats micro stats`) and the Prometheus counter of the same name, so no two sources disagree.

use std::{
    collections::BTreeMap,
    sync::{
        Arc, Mutex,
        atomic::{AtomicU64, Ordering},
    },
};

use sleuth_messages::Stage;

pub use crate::telemetry::metrics::Counter;

/// Counters per stage, read by tests and `nats micro stats`, and exported as Prometheus counters.
#[derive(Debug, Default)]
pub struct Stats {
    counters: Mutex<BTreeMap<(Stage, Counter), Arc<AtomicU64>>>,
}

impl Stats {
    fn counter(&self, stage: Stage, counter: Counter) -> Arc<AtomicU64> {
        self.counters.lock().unwrap_or_else(|e| e.into_inner()).entry((stage, counter)).or_default().clone()
    }

    pub fn incr(&self, stage: Stage, counter: Counter) {
        self.counter(stage, counter).fetch_add(1, Ordering::Relaxed);
        if crate::telemetry::metrics::recording() {
            metrics::counter!(counter.metric(), "stage" => stage.as_str()).increment(1);
        }
    }

    pub fn get(&self, stage: Stage, counter: Counter) -> u64 {
        self.counter(stage, counter).load(Ordering::Relaxed)
    }

    /// Every counter that moved, for one stage: what its NATS micro service reports.
    pub fn of_stage(&self, stage: Stage) -> BTreeMap<&'static str, u64> {
        self.counters
            .lock()
            .unwrap_or_else(|e| e.into_inner())
            .iter()
            .filter(|((s, _), _)| *s == stage)
            .map(|((_, c), v)| (c.as_str(), v.load(Ordering::Relaxed)))
            .collect()
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn counters_are_per_stage() {
        let stats = Stats::default();
        stats.incr(Stage::Planner, Counter::Duplicates);
        stats.incr(Stage::Planner, Counter::Duplicates);
        stats.incr(Stage::Grader, Counter::Restarts);
        assert_eq!(stats.get(Stage::Planner, Counter::Duplicates), 2);
        assert_eq!(stats.get(Stage::Grader, Counter::Duplicates), 0);
        assert_eq!(stats.of_stage(Stage::Planner).get("duplicates"), Some(&2));
    }

    #[test]
    fn every_counter_has_a_distinct_metric() {
        let names: std::collections::BTreeSet<_> = Counter::ALL.iter().map(|c| c.metric()).collect();
        assert_eq!(names.len(), Counter::ALL.len());
        assert!(names.iter().all(|n| n.starts_with("sleuth_") && n.ends_with("_total")));
    }
}
