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

/// What the runtime counts.
#[derive(Debug, Clone, Copy, PartialEq, Eq, PartialOrd, Ord, Hash)]
pub enum Counter {
    /// A delivery whose work was committed.
    Applied,
    /// A delivery whose effect was already recorded: re-published and acked, nothing re-done.
    Duplicates,
    /// A delivery for a request whose state is gone.
    Orphans,
    /// A delivery that arrived more than once (JetStream redelivered it).
    Redeliveries,
    /// A compare-and-swap that lost to another writer and was retried.
    CasConflicts,
    /// A delivery whose handling failed and was handed back for redelivery.
    Failures,
    /// A request ended with an error after its work failed `max_deliver` times.
    DeadLetters,
    /// A worker actor that panicked and was restarted.
    Restarts,
    /// A stage supervisor that failed and was restarted.
    StageRestarts,
    /// In-flight work dropped because its request was cancelled.
    Cancelled,
    /// A request answered by the deadline watchdog.
    WatchdogAnswers,
}

impl Counter {
    pub const ALL: [Counter; 11] = [
        Counter::Applied,
        Counter::Duplicates,
        Counter::Orphans,
        Counter::Redeliveries,
        Counter::CasConflicts,
        Counter::Failures,
        Counter::DeadLetters,
        Counter::Restarts,
        Counter::StageRestarts,
        Counter::Cancelled,
        Counter::WatchdogAnswers,
    ];

    pub fn as_str(self) -> &'static str {
        match self {
            Counter::Applied => "applied",
            Counter::Duplicates => "duplicates",
            Counter::Orphans => "orphans",
            Counter::Redeliveries => "redeliveries",
            Counter::CasConflicts => "cas_conflicts",
            Counter::Failures => "failures",
            Counter::DeadLetters => "dead_letters",
            Counter::Restarts => "restarts",
            Counter::StageRestarts => "stage_restarts",
            Counter::Cancelled => "cancelled",
            Counter::WatchdogAnswers => "watchdog_answers",
        }
    }

    /// The Prometheus counter, labelled by `stage`.
    pub fn metric(self) -> &'static str {
        match self {
            Counter::Applied => "sleuth_work_applied_total",
            Counter::Duplicates => "sleuth_duplicates_skipped_total",
            Counter::Orphans => "sleuth_orphans_total",
            Counter::Redeliveries => "sleuth_redeliveries_total",
            Counter::CasConflicts => "sleuth_cas_conflicts_total",
            Counter::Failures => "sleuth_work_failures_total",
            Counter::DeadLetters => "sleuth_dead_letters_total",
            Counter::Restarts => "sleuth_worker_restarts_total",
            Counter::StageRestarts => "sleuth_stage_restarts_total",
            Counter::Cancelled => "sleuth_cancelled_work_total",
            Counter::WatchdogAnswers => "sleuth_watchdog_answers_total",
        }
    }

    pub fn help(self) -> &'static str {
        match self {
            Counter::Applied => "deliveries whose work was committed, by stage",
            Counter::Duplicates => "deliveries whose effect was already recorded, by stage",
            Counter::Orphans => "deliveries for a request whose state is gone, by stage",
            Counter::Redeliveries => "deliveries that arrived more than once, by stage",
            Counter::CasConflicts => "compare-and-swap conflicts that were retried, by stage",
            Counter::Failures => "deliveries handed back for redelivery after a failure, by stage",
            Counter::DeadLetters => "requests ended with an error after max_deliver failures, by stage",
            Counter::Restarts => "worker actors restarted after a panic, by stage",
            Counter::StageRestarts => "stage supervisors restarted, by stage",
            Counter::Cancelled => "in-flight deliveries dropped because their request was cancelled, by stage",
            Counter::WatchdogAnswers => "requests the deadline watchdog answered, by the stage they waited on",
        }
    }
}

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
