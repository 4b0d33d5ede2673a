//! Admission: intake refuses, at once and with `overloaded`, a request that could not start before its deadline.
//!
//! A request starts when a planner takes its first work item, and the planner's work waits in one queue. So the
//! expected wait is that queue's backlog divided by the rate at which planners take work, both read from the bus
//! (JetStream's consumer info, or the in-process channel's counts). Readings are shared for
//! [`SAMPLE_EVERY`], so a burst of questions costs one reading. The rate is the best the planners kept up for a
//! second over the last [`RATE_WINDOW`]: what they can do, not what they did in the last moment, so a pause of a
//! few seconds (a NATS cluster electing a stream's leader, a planner restarting) does not turn every question
//! away while the queue would drain in time once it ends. With fewer than `intake.admission_min_backlog` items
//! waiting, every request is admitted: a short queue drains in time.

use std::{
    collections::VecDeque,
    sync::Mutex,
    time::{Duration, Instant},
};

use sleuth_messages::{ErrorKind, ErrorResponse, Stage};

use crate::bus::{Backlog, Bus};

/// How long one reading of the backlog is used for.
pub const SAMPLE_EVERY: Duration = Duration::from_millis(250);

/// The rate is measured over readings at least this far apart, within the last [`RATE_WINDOW`].
const MIN_RATE_SPAN: Duration = Duration::from_secs(1);
/// How far back the planners' best rate is remembered: longer than a cluster's leader election (up to 9 s) and
/// a restarting planner, short enough that planners gone for good are soon seen as gone.
const RATE_WINDOW: Duration = Duration::from_secs(60);

#[derive(Debug, Clone, Copy)]
struct Reading {
    at: Instant,
    backlog: Backlog,
}

/// The planner queue's recent readings, shared by every request this process admits.
pub struct Admission {
    min_backlog: u64,
    readings: Mutex<VecDeque<Reading>>,
}

/// What the readings say about a new request.
#[derive(Debug, Clone, PartialEq)]
enum Verdict {
    Admit,
    /// Refused: `waiting` items ahead, taken at `per_second` (0 when nothing was taken lately).
    Overloaded {
        waiting: u64,
        per_second: f64,
    },
}

impl Admission {
    /// `min_backlog` 0 admits everything.
    pub fn new(min_backlog: u64) -> Admission {
        Admission { min_backlog, readings: Mutex::new(VecDeque::new()) }
    }

    /// Admits a request whose time budget is `budget`, or refuses it with a retryable `overloaded` error that
    /// says how far behind the planners are. A bus that cannot be read admits: the queue is not known to be long.
    pub async fn admit(&self, bus: &dyn Bus, budget: Duration) -> Result<(), ErrorResponse> {
        if self.min_backlog == 0 {
            return Ok(());
        }
        let now = Instant::now();
        let fresh = self.latest().filter(|r| now.duration_since(r.at) < SAMPLE_EVERY);
        let reading = match fresh {
            Some(reading) => reading,
            None => match bus.backlog(Stage::Planner).await {
                Ok(backlog) => self.record(Reading { at: Instant::now(), backlog }),
                Err(e) => {
                    tracing::debug!(error = %e, "cannot read the planner's backlog: admitting");
                    return Ok(());
                }
            },
        };
        let verdict = self.verdict(reading, budget);
        tracing::debug!(
            waiting = reading.backlog.waiting,
            delivered = reading.backlog.delivered,
            ?verdict,
            "admission"
        );
        match verdict {
            Verdict::Admit => Ok(()),
            Verdict::Overloaded { waiting, per_second } => {
                let pace = if per_second > 0.0 {
                    format!(
                        "planners take {per_second:.1} a second, about {:.0} s of work",
                        waiting as f64 / per_second
                    )
                } else {
                    "no planner has taken work for a while".to_string()
                };
                Err(ErrorResponse::new(
                    ErrorKind::Overloaded,
                    format!(
                        "overloaded: {waiting} work items wait for a planner ({pace}), more than this request's {} ms \
                         budget; retry later, or run more planners",
                        budget.as_millis()
                    ),
                ))
            }
        }
    }

    fn latest(&self) -> Option<Reading> {
        self.readings.lock().expect("admission readings poisoned").back().copied()
    }

    fn record(&self, reading: Reading) -> Reading {
        let mut readings = self.readings.lock().expect("admission readings poisoned");
        readings.push_back(reading);
        while readings.front().is_some_and(|r| reading.at.duration_since(r.at) > RATE_WINDOW) {
            readings.pop_front();
        }
        reading
    }

    /// Refuses when at least `min_backlog` items wait and, at the best rate planners took work over the window,
    /// they would not all be taken within `budget`. With readings spanning less than [`MIN_RATE_SPAN`] the rate is
    /// not known yet, and the request is admitted.
    fn verdict(&self, latest: Reading, budget: Duration) -> Verdict {
        let waiting = latest.backlog.waiting;
        if waiting < self.min_backlog {
            return Verdict::Admit;
        }
        let mut readings = self.readings.lock().expect("admission readings poisoned");
        let Some(per_second) = best_rate(readings.make_contiguous()) else {
            return Verdict::Admit;
        };
        if per_second > 0.0 && waiting as f64 / per_second <= budget.as_secs_f64() {
            Verdict::Admit
        } else {
            Verdict::Overloaded { waiting, per_second }
        }
    }
}

/// The best rate at which work was taken between two readings at least [`MIN_RATE_SPAN`] apart (each reading
/// against the latest one that far before it), in items a second; `None` when the readings span less.
fn best_rate(readings: &[Reading]) -> Option<f64> {
    let mut best: Option<f64> = None;
    let mut from = 0;
    for to in readings {
        // `from` ends at the latest reading at least MIN_RATE_SPAN before `to`; readings are in time order.
        while readings.get(from + 1).is_some_and(|next| to.at.duration_since(next.at) >= MIN_RATE_SPAN) {
            from += 1;
        }
        let start = &readings[from];
        let span = to.at.duration_since(start.at);
        if span < MIN_RATE_SPAN {
            continue;
        }
        let rate = to.backlog.delivered.saturating_sub(start.backlog.delivered) as f64 / span.as_secs_f64();
        best = Some(best.map_or(rate, |b: f64| b.max(rate)));
    }
    best
}

#[cfg(test)]
mod tests {
    use super::*;

    fn reading(at: Instant, waiting: u64, delivered: u64) -> Reading {
        Reading { at, backlog: Backlog { waiting, delivered, pulls: 0 } }
    }

    #[test]
    fn a_backlog_that_drains_within_the_budget_is_admitted_and_one_that_does_not_is_refused() {
        let admission = Admission::new(10);
        let t0 = Instant::now();
        admission.record(reading(t0, 500, 1_000));
        // 100 items taken in 2 s: 50 a second. 500 waiting is 10 s of work.
        let latest = admission.record(reading(t0 + Duration::from_secs(2), 500, 1_100));
        assert_eq!(admission.verdict(latest, Duration::from_secs(30)), Verdict::Admit);
        assert_eq!(
            admission.verdict(latest, Duration::from_secs(5)),
            Verdict::Overloaded { waiting: 500, per_second: 50.0 }
        );
    }

    #[test]
    fn a_short_queue_or_an_unknown_rate_is_admitted_and_a_stalled_queue_is_refused() {
        let admission = Admission::new(10);
        let t0 = Instant::now();
        let first = admission.record(reading(t0, 9, 0));
        assert_eq!(admission.verdict(first, Duration::from_millis(1)), Verdict::Admit, "below the minimum");
        let soon = admission.record(reading(t0 + Duration::from_millis(500), 50, 0));
        assert_eq!(admission.verdict(soon, Duration::from_millis(1)), Verdict::Admit, "no rate yet");
        let later = admission.record(reading(t0 + Duration::from_secs(3), 50, 0));
        assert_eq!(
            admission.verdict(later, Duration::from_secs(300)),
            Verdict::Overloaded { waiting: 50, per_second: 0.0 },
            "nothing taken in 3 s"
        );
    }

    #[test]
    fn a_pause_after_planners_showed_their_pace_is_not_an_overload_but_planners_that_never_took_work_are() {
        let admission = Admission::new(10);
        let t0 = Instant::now();
        let at = |s: u64| t0 + Duration::from_secs(s);
        // 50 a second for 4 s, then nothing for 8 s (a leader election) while 400 items pile up.
        for s in 0..=4 {
            admission.record(reading(at(s), 20, 50 * s));
        }
        let paused = admission.record(reading(at(12), 400, 200));
        assert_eq!(admission.verdict(paused, Duration::from_secs(60)), Verdict::Admit, "8 s of work at their pace");
        assert_eq!(
            admission.verdict(paused, Duration::from_secs(5)),
            Verdict::Overloaded { waiting: 400, per_second: 50.0 },
            "but not within 5 s"
        );
        // A minute later the pace they showed is forgotten: nothing taken is nothing taken.
        for s in (16..80).step_by(4) {
            admission.record(reading(at(s), 400, 200));
        }
        let gone = admission.record(reading(at(80), 400, 200));
        assert_eq!(
            admission.verdict(gone, Duration::from_secs(60)),
            Verdict::Overloaded { waiting: 400, per_second: 0.0 }
        );
    }

    #[test]
    fn a_minimum_of_zero_admits_everything() {
        let admission = Admission::new(0);
        let bus = crate::bus::memory::MemoryBus::new(3);
        let admitted = futures::executor::block_on(admission.admit(&*bus, Duration::ZERO));
        assert!(admitted.is_ok());
    }
}
