//! Limits per tenant (`config.tenants`): intake refuses, at once and with the retryable `limited` error, a
//! tenant's request when the tenant already has as many requests under way as it may, has used its share of
//! requests a second, or its ended requests spent its LLM tokens for the day. Nothing of a refused request is
//! stored or started.
//!
//! The counts are this process's own: the requests it admitted, each until its loop state says it ended (or its
//! deadline has long passed), and the LLM tokens those states record. Intake learns that a request ended by
//! reading its state when it must know (a tenant at its limit), at most every [`SWEEP_EVERY`]; no other stage
//! reports back, so a crash anywhere loses no count that matters and leaks no slot past a deadline.

use std::{
    collections::HashMap,
    sync::Mutex,
    time::{Duration, Instant},
};

use sleuth_messages::{ErrorKind, ErrorResponse, Phase, Principal};
use uuid::Uuid;

use crate::{config::TenantLimits, store::StateStore, telemetry};

/// How often a tenant's requests under way are looked up in the state store, at most.
pub const SWEEP_EVERY: Duration = Duration::from_millis(100);

/// A request is taken to have ended this long after its deadline even if its state cannot be read: the
/// watchdog ends a request at its deadline.
const DEADLINE_GRACE_MS: u64 = 5_000;

const DAY_MS: u64 = 86_400_000;

/// What each tenant has under way and has spent, as far as this process knows.
#[derive(Default)]
pub struct Quotas {
    tenants: Mutex<HashMap<String, Usage>>,
}

#[derive(Debug, Default)]
struct Usage {
    /// Requests admitted and not known to have ended, with their deadlines (ms since the epoch).
    under_way: Vec<(Uuid, u64)>,
    /// The rate's token bucket: requests it holds, and when it was filled last.
    bucket: Option<(f64, Instant)>,
    /// The UTC day (days since the epoch) `tokens` counts, and the LLM tokens that day's ended requests spent.
    day: u64,
    tokens: u64,
    swept: Option<Instant>,
}

/// What a look-up said about a request under way.
#[derive(Debug, Clone, Copy, PartialEq)]
enum Seen {
    /// Ended, having spent this many LLM tokens.
    Ended(u64),
    UnderWay,
}

impl Usage {
    /// Forgets the requests `seen` ended (counting their tokens once, on the day they are seen to end) and those
    /// long past their deadline.
    fn settle(&mut self, seen: &[(Uuid, Seen)], now_ms: u64) {
        let today = now_ms / DAY_MS;
        if self.day != today {
            (self.day, self.tokens) = (today, 0);
        }
        for (id, what) in seen {
            if let Seen::Ended(tokens) = what
                && let Some(i) = self.under_way.iter().position(|(u, _)| u == id)
            {
                self.under_way.swap_remove(i);
                self.tokens = self.tokens.saturating_add(*tokens);
            }
        }
        self.under_way.retain(|(_, deadline)| deadline.saturating_add(DEADLINE_GRACE_MS) > now_ms);
    }

    /// Whether a sweep would tell the limits anything they need: a tenant at its cap, or with a daily budget.
    fn wants_sweep(&self, limits: &TenantLimits, now: Instant) -> bool {
        let at_cap = limits.max_under_way.is_some_and(|max| self.under_way.len() >= max as usize);
        let budgeted = limits.llm_tokens_per_day.is_some() && !self.under_way.is_empty();
        (at_cap || budgeted) && self.swept.is_none_or(|t| now.duration_since(t) >= SWEEP_EVERY)
    }

    /// The limit a new request would pass, if any; takes one request from the rate's bucket when none.
    fn refuse(&mut self, limits: &TenantLimits, now: Instant) -> Option<(&'static str, String)> {
        if let Some(max) = limits.llm_tokens_per_day
            && self.tokens >= max
        {
            let why = format!("its requests spent {} LLM tokens today, its limit is {max}", self.tokens);
            return Some(("llm_tokens_per_day", why));
        }
        if let Some(max) = limits.max_under_way
            && self.under_way.len() >= max as usize
        {
            let why = format!("it has {} requests under way, its limit is {max}", self.under_way.len());
            return Some(("max_under_way", why));
        }
        if let Some(rate) = limits.per_second {
            // Without a burst, a second's worth may come at once.
            let burst = f64::from(limits.burst.unwrap_or(rate.ceil().min(f64::from(u32::MAX)) as u32).max(1));
            let (held, at) = self.bucket.unwrap_or((burst, now));
            let held = (held + now.duration_since(at).as_secs_f64() * rate).min(burst);
            if held < 1.0 {
                self.bucket = Some((held, now));
                return Some(("per_second", format!("it may send {rate} requests a second (burst {burst})")));
            }
            self.bucket = Some((held - 1.0, now));
        }
        None
    }
}

impl Quotas {
    /// Admits request `request_id` (deadline `deadline_ms`) of `by` under `limits`, counting it as under way,
    /// or refuses it with `limited`. The deployment's own requests (`by` is `None`) have no limits.
    pub async fn admit(
        &self,
        store: &dyn StateStore,
        by: Option<&Principal>,
        limits: TenantLimits,
        request_id: Uuid,
        deadline_ms: u64,
    ) -> Result<(), ErrorResponse> {
        let Some(by) = by.filter(|_| limits.any()) else { return Ok(()) };
        let now = Instant::now();
        let to_look_up: Vec<Uuid> = {
            let mut tenants = self.tenants.lock().expect("quotas poisoned");
            let usage = tenants.entry(by.tenant.clone()).or_default();
            usage.settle(&[], telemetry::now_ms());
            if usage.wants_sweep(&limits, now) {
                usage.swept = Some(now);
                usage.under_way.iter().map(|(id, _)| *id).collect()
            } else {
                Vec::new()
            }
        };
        let mut seen = Vec::with_capacity(to_look_up.len());
        for id in to_look_up {
            seen.push((id, look_up(store, id).await));
        }
        let mut tenants = self.tenants.lock().expect("quotas poisoned");
        let usage = tenants.entry(by.tenant.clone()).or_default();
        usage.settle(&seen, telemetry::now_ms());
        if let Some((limit, why)) = usage.refuse(&limits, now) {
            telemetry::metrics::tenant_refused(&by.tenant, limit);
            tracing::info!(tenant = %by.tenant, limit, %why, "refused a tenant's request at its limit");
            return Err(ErrorResponse::new(
                ErrorKind::Limited,
                format!("tenant {} is at a limit: {why} (tenants.{limit}); retry later", by.tenant),
            ));
        }
        // A request id sent again before its state was stored is one request.
        if !usage.under_way.iter().any(|(id, _)| *id == request_id) {
            usage.under_way.push((request_id, deadline_ms));
        }
        Ok(())
    }

    /// Frees the slot of a request that was admitted but never stored (intake could not store its state).
    pub fn release(&self, by: &Principal, request_id: Uuid) {
        let mut tenants = self.tenants.lock().expect("quotas poisoned");
        if let Some(usage) = tenants.get_mut(&by.tenant) {
            usage.under_way.retain(|(id, _)| *id != request_id);
        }
    }
}

/// Whether a request has ended, from its state. One without a state, or whose state cannot be read now, is taken
/// to be under way (the deadline prune of [`Usage::settle`] drops it at the latest).
async fn look_up(store: &dyn StateStore, request_id: Uuid) -> Seen {
    match store.load(request_id).await {
        Ok(Some((state, _))) if state.phase == Phase::Done => Seen::Ended(u64::from(state.counters.tokens_used)),
        Ok(Some(_)) => Seen::UnderWay,
        // Not stored yet: intake admits a request before it analyses it (an LLM rewrite may take a quarter of its
        // time), so a request without a state is under way until its deadline; one whose state expired is long
        // past it, and intake releases one it failed to store.
        Ok(None) => Seen::UnderWay,
        Err(e) => {
            tracing::debug!(%request_id, error = %e, "cannot read a tenant's request: still counted as under way");
            Seen::UnderWay
        }
    }
}

#[cfg(test)]
mod tests {
    use sleuth_messages::AskRequest;

    use super::*;
    use crate::{
        config::LoopConfig,
        machine::{NewRequest, caps_for, new_state},
        stages::intake,
        store::memory::MemoryStore,
    };

    fn stored(store: &MemoryStore, request_id: Uuid, tokens: u32, done: bool) {
        let analysis = intake::analyze("Which anime is Luffy in?", &crate::fixtures::demo_types());
        let mut state = new_state(NewRequest {
            request_id,
            request: AskRequest::new("Which anime is Luffy in?"),
            caps: caps_for(&LoopConfig::default(), analysis.route, Some(3)),
            analysis,
            now_ms: telemetry::now_ms(),
            deadline_ms: telemetry::now_ms() + 60_000,
            reply: None,
            trace: Default::default(),
            records_root_span: false,
        });
        state.counters.tokens_used = tokens;
        if done {
            state.phase = Phase::Done;
        }
        let revision = futures::executor::block_on(store.load(request_id)).unwrap().map(|(_, r)| r);
        match revision {
            None => futures::executor::block_on(store.create(&state)).map(|_| ()),
            Some(r) => futures::executor::block_on(store.compare_and_swap(&state, r)).map(|_| ()),
        }
        .unwrap();
    }

    fn ask(quotas: &Quotas, store: &MemoryStore, by: &Principal, limits: TenantLimits) -> Result<Uuid, ErrorKind> {
        let id = Uuid::now_v7();
        let deadline = telemetry::now_ms() + 60_000;
        futures::executor::block_on(quotas.admit(store, Some(by), limits, id, deadline)).map_err(|e| e.kind)?;
        stored(store, id, 0, false);
        Ok(id)
    }

    #[test]
    fn a_tenant_at_its_cap_is_refused_until_one_of_its_requests_ends_and_others_are_not_held_up() {
        let (quotas, store) = (Quotas::default(), MemoryStore::default());
        let (alpha, beta) = (Principal::tenant("ALPHA"), Principal::tenant("BETA"));
        let limits = TenantLimits { max_under_way: Some(2), ..Default::default() };
        let first = ask(&quotas, &store, &beta, limits).unwrap();
        ask(&quotas, &store, &beta, limits).unwrap();
        assert_eq!(ask(&quotas, &store, &beta, limits), Err(ErrorKind::Limited));
        assert!(ask(&quotas, &store, &alpha, limits).is_ok(), "another tenant has its own count");
        let none = futures::executor::block_on(quotas.admit(&store, None, limits, Uuid::now_v7(), u64::MAX));
        assert!(none.is_ok(), "the deployment's own account has no limits");
        stored(&store, first, 0, true);
        std::thread::sleep(SWEEP_EVERY);
        assert!(ask(&quotas, &store, &beta, limits).is_ok(), "an ended request frees its slot");
        assert!(ErrorResponse::new(ErrorKind::Limited, "m").retryable);
    }

    #[test]
    fn a_rate_admits_its_burst_then_refuses_until_the_bucket_fills() {
        // On the bucket itself, with instants of the test's making: no wall clock decides the outcome.
        let mut usage = Usage::default();
        let limits = TenantLimits { per_second: Some(20.0), burst: Some(3), ..Default::default() };
        let start = Instant::now();
        for _ in 0..3 {
            assert_eq!(usage.refuse(&limits, start), None);
        }
        let refused = usage.refuse(&limits, start).map(|(limit, _)| limit);
        assert_eq!(refused, Some("per_second"), "the burst of 3 is spent");
        assert_eq!(usage.refuse(&limits, start + Duration::from_millis(30)).map(|(l, _)| l), Some("per_second"));
        assert_eq!(
            usage.refuse(&limits, start + Duration::from_millis(60)),
            None,
            "a twentieth of a second refills one"
        );
        assert!(usage.refuse(&limits, start + Duration::from_millis(61)).is_some(), "and only one");
        assert_eq!(usage.refuse(&limits, start + Duration::from_secs(10)), None, "a long pause refills the burst");
    }

    #[test]
    fn the_tokens_of_ended_requests_count_against_the_day_and_once_only() {
        let (quotas, store) = (Quotas::default(), MemoryStore::default());
        let beta = Principal::tenant("BETA");
        let limits = TenantLimits { llm_tokens_per_day: Some(1_000), ..Default::default() };
        let first = ask(&quotas, &store, &beta, limits).unwrap();
        stored(&store, first, 600, true);
        std::thread::sleep(SWEEP_EVERY);
        let second = ask(&quotas, &store, &beta, limits).unwrap();
        std::thread::sleep(SWEEP_EVERY);
        ask(&quotas, &store, &beta, limits).expect("600 of 1,000 spent, counted once");
        stored(&store, second, 500, true);
        std::thread::sleep(SWEEP_EVERY);
        assert_eq!(ask(&quotas, &store, &beta, limits), Err(ErrorKind::Limited), "1,100 spent");
        assert_eq!(ask(&quotas, &store, &Principal::tenant("ALPHA"), limits).map(|_| ()), Ok(()));
    }

    #[test]
    fn a_request_admitted_but_not_yet_stored_holds_its_slot_until_released() {
        // Intake admits first and stores the state after analysing the question (an LLM rewrite may take seconds):
        // a sweep in between must not take the missing state for an ended request.
        let (quotas, store) = (Quotas::default(), MemoryStore::default());
        let beta = Principal::tenant("BETA");
        let limits = TenantLimits { max_under_way: Some(1), ..Default::default() };
        let first = Uuid::now_v7();
        let deadline = telemetry::now_ms() + 60_000;
        futures::executor::block_on(quotas.admit(&store, Some(&beta), limits, first, deadline)).unwrap();
        std::thread::sleep(SWEEP_EVERY);
        let second = futures::executor::block_on(quotas.admit(&store, Some(&beta), limits, Uuid::now_v7(), deadline));
        assert_eq!(second.map_err(|e| e.kind), Err(ErrorKind::Limited), "the unstored first request is under way");
        quotas.release(&beta, first);
        assert!(ask(&quotas, &store, &beta, limits).is_ok(), "a released slot is free");
    }

    #[test]
    fn a_request_long_past_its_deadline_holds_no_slot() {
        let mut usage = Usage::default();
        let now_ms = telemetry::now_ms();
        usage.under_way = vec![(Uuid::now_v7(), now_ms - DEADLINE_GRACE_MS - 1), (Uuid::now_v7(), now_ms)];
        usage.settle(&[], now_ms);
        assert_eq!(usage.under_way.len(), 1);
    }
}
