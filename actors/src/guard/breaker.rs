//! [`Breaker`]: a circuit breaker over calls to one backend (seed 002 §10 tier 3). It opens after N
//! consecutive failures or when a share of the recent calls failed, keeps every call out for a cooldown, then
//! lets one probe through.

use std::{
    collections::VecDeque,
    sync::Mutex,
    time::{Duration, Instant},
};

#[derive(Debug)]
pub struct Breaker {
    consecutive_limit: u32,
    failure_ratio: f32,
    window: usize,
    cooldown: Duration,
    state: Mutex<State>,
}

#[derive(Debug, Default)]
struct State {
    consecutive_failures: u32,
    /// The last `window` outcomes, `true` for a failure.
    recent: VecDeque<bool>,
    open_until: Option<Instant>,
    /// After the cooldown one call probes; the others stay out until it reports.
    probing: bool,
}

impl Breaker {
    pub fn new(consecutive_limit: u32, failure_ratio: f32, window: u32, cooldown: Duration) -> Breaker {
        Breaker {
            consecutive_limit: consecutive_limit.max(1),
            failure_ratio,
            window: window.max(1) as usize,
            cooldown,
            state: Mutex::new(State::default()),
        }
    }

    fn lock(&self) -> std::sync::MutexGuard<'_, State> {
        self.state.lock().unwrap_or_else(|e| e.into_inner())
    }

    /// May a call go out now? While open, no; after the cooldown, exactly one probe.
    pub fn allow(&self) -> bool {
        let mut s = self.lock();
        match s.open_until {
            None => true,
            Some(until) if Instant::now() < until => false,
            Some(_) if s.probing => false,
            Some(_) => {
                s.probing = true;
                true
            }
        }
    }

    /// True while calls are being kept out.
    pub fn is_open(&self) -> bool {
        self.lock().open_until.is_some()
    }

    /// Opens the circuit now, whatever the counts say: the caller knows the backend is down.
    pub fn trip(&self) {
        let mut s = self.lock();
        s.open_until = Some(Instant::now() + self.cooldown);
        s.probing = false;
    }

    /// Records one call's outcome; opens, re-opens or closes the circuit.
    pub fn record(&self, ok: bool) {
        let mut s = self.lock();
        if ok && s.open_until.is_some() {
            // A good probe closes the circuit and starts a fresh window.
            *s = State::default();
        }
        if s.recent.len() == self.window {
            s.recent.pop_front();
        }
        s.recent.push_back(!ok);
        if ok {
            s.consecutive_failures = 0;
            return;
        }
        s.consecutive_failures += 1;
        let failed = s.recent.iter().filter(|f| **f).count();
        // The ratio only counts once the window holds enough calls to mean something.
        let ratio_tripped =
            s.recent.len() >= self.window.min(4) && failed as f32 >= self.failure_ratio * s.recent.len() as f32;
        if s.probing || s.consecutive_failures >= self.consecutive_limit || ratio_tripped {
            s.open_until = Some(Instant::now() + self.cooldown);
            s.probing = false;
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn opens_after_consecutive_failures_and_probes_after_the_cooldown() {
        let b = Breaker::new(3, 1.0, 10, Duration::from_millis(30));
        for _ in 0..2 {
            assert!(b.allow());
            b.record(false);
        }
        assert!(!b.is_open(), "two failures are not three");
        b.record(false);
        assert!(b.is_open() && !b.allow(), "open after three in a row");
        std::thread::sleep(Duration::from_millis(40));
        assert!(b.allow(), "one probe after the cooldown");
        assert!(!b.allow(), "and only one");
        b.record(false);
        assert!(!b.allow(), "a failed probe re-opens");
        std::thread::sleep(Duration::from_millis(40));
        assert!(b.allow());
        b.record(true);
        assert!(!b.is_open() && b.allow() && b.allow(), "a good probe closes");
    }

    #[test]
    fn opens_when_half_the_recent_calls_failed() {
        let b = Breaker::new(100, 0.5, 10, Duration::from_secs(60));
        for ok in [true, false, true] {
            b.record(ok);
        }
        assert!(!b.is_open(), "three calls are too few to judge");
        b.record(false);
        assert!(b.is_open(), "2 of the last 4 calls failed");
    }
}
