//! Limits per tenant (`config.tenants`): intake refuses, at once and with the retryable `limited` error, a
//! tenant's request when the tenant already has as many requests under way as it may, has used its share of
//! requests a second, or its ended requests spent its LLM tokens for the day. Nothing of a refused request is
//! stored or started.
//!
//! The counts are the deployment's, not one process's: each tenant's [`TenantUsage`] is one key of a [`Bucket`]
//! (the `sleuth_quotas` KV bucket on NATS, a map in the embedded default) that every intake replica reads and
//! writes with compare-and-swap, so R replicas admit what one would. A request counts as under way from its
//! admission until its loop state says it ended (or its deadline has long passed). Intake learns that a request
//! ended by reading its state when it must know (a tenant at its cap, or with a daily budget), at most every
//! [`SWEEP_EVERY`] per process; no other stage reports back, so a crash anywhere loses no count that matters and
//! leaks no slot past a deadline.

use std::{
    collections::HashMap,
    sync::{Arc, Mutex},
    time::{Duration, Instant},
};

use bytes::Bytes;
use sleuth_messages::{
    Encoding, ErrorKind, ErrorResponse, Phase, Principal, RateBucket, TenantUsage, UnderWay, codec, quota::usage_key,
    subjects::Subjects,
};
use uuid::Uuid;

use crate::{
    config::TenantLimits,
    store::{
        StateStore, StoreError,
        bucket::{Bucket, KvBucket, MemoryBucket},
    },
    telemetry,
};

/// How often a tenant's requests under way are looked up in the state store, at most, by one process.
pub const SWEEP_EVERY: Duration = Duration::from_millis(100);

/// A request is taken to have ended this long after its deadline even if its state cannot be read: the
/// watchdog ends a request at its deadline.
const DEADLINE_GRACE_MS: u64 = 5_000;

const DAY_MS: u64 = 86_400_000;

/// How long a tenant's usage is kept after its last write (the `sleuth_quotas` bucket's TTL): longer than the day
/// it counts and than any deadline.
pub const USAGE_TTL: Duration = Duration::from_secs(2 * 86_400);

/// Attempts at writing a tenant's usage while other replicas write it too; then the request is refused as limited.
const CAS_ATTEMPTS: usize = 16;

/// The most requests under way kept per tenant, whatever its limits: the usage is one KV value.
const MAX_TRACKED: usize = 4_096;

/// The description of the `sleuth_quotas` bucket.
pub const QUOTAS_DESCRIPTION: &str = "sleuth tenants' requests under way and spending, one key per tenant";

/// Every tenant's usage, and when this process last swept each.
pub struct Quotas {
    bucket: Arc<dyn Bucket>,
    swept: Mutex<HashMap<String, Instant>>,
}

impl Default for Quotas {
    /// One process's own counts, for the embedded default.
    fn default() -> Self {
        Quotas::new(Arc::new(MemoryBucket::new(Some(USAGE_TTL))))
    }
}

/// What a look-up said about a request under way.
#[derive(Debug, Clone, Copy, PartialEq)]
enum Seen {
    /// Ended, having spent this many LLM tokens.
    Ended(u64),
    UnderWay,
}

/// Forgets the requests `seen` ended (counting their tokens once, on the day they are seen to end) and those long
/// past their deadline.
fn settle(usage: &mut TenantUsage, seen: &[(Uuid, Seen)], now_ms: u64) {
    let today = now_ms / DAY_MS;
    if usage.day != today {
        (usage.day, usage.tokens) = (today, 0);
    }
    for (id, what) in seen {
        if let Seen::Ended(tokens) = what
            && let Some(i) = usage.under_way.iter().position(|u| u.request_id == *id)
        {
            usage.under_way.swap_remove(i);
            usage.tokens = usage.tokens.saturating_add(*tokens);
        }
    }
    usage.under_way.retain(|u| u.deadline_ms.saturating_add(DEADLINE_GRACE_MS) > now_ms);
}

/// Whether the limits need the requests under way counted: a cap on them, or a daily budget their ends spend.
fn tracks(limits: &TenantLimits) -> bool {
    limits.max_under_way.is_some() || limits.llm_tokens_per_day.is_some()
}

/// Whether a sweep would tell the limits anything they need: a tenant at its cap, or with a daily budget.
fn wants_sweep(usage: &TenantUsage, limits: &TenantLimits) -> bool {
    let at_cap = limits.max_under_way.is_some_and(|max| usage.under_way.len() >= max as usize);
    let budgeted = limits.llm_tokens_per_day.is_some() && !usage.under_way.is_empty();
    at_cap || budgeted
}

/// The limit a new request would pass, if any; takes one request from the rate's bucket when none.
fn refuse(usage: &mut TenantUsage, limits: &TenantLimits, now_ms: u64) -> Option<(&'static str, String)> {
    if let Some(max) = limits.llm_tokens_per_day
        && usage.tokens >= max
    {
        let why = format!("its requests spent {} LLM tokens today, its limit is {max}", usage.tokens);
        return Some(("llm_tokens_per_day", why));
    }
    let cap = limits.max_under_way.map_or(MAX_TRACKED, |max| (max as usize).min(MAX_TRACKED));
    if tracks(limits) && usage.under_way.len() >= cap {
        let why = format!("it has {} requests under way, its limit is {cap}", usage.under_way.len());
        return Some(("max_under_way", why));
    }
    if let Some(rate) = limits.per_second {
        // Without a burst, a second's worth may come at once.
        let burst = f64::from(limits.burst.unwrap_or(rate.ceil().min(f64::from(u32::MAX)) as u32).max(1));
        let RateBucket { held, at_ms } = usage.rate.unwrap_or(RateBucket { held: burst, at_ms: now_ms });
        // A clock behind another replica's refills nothing; a bucket from a wider burst holds at most this one.
        let refill = now_ms.saturating_sub(at_ms) as f64 / 1_000.0 * rate;
        let held = (held.max(0.0) + refill).min(burst);
        if held < 1.0 {
            return Some(("per_second", format!("it may send {rate} requests a second (burst {burst})")));
        }
        usage.rate = Some(RateBucket { held: held - 1.0, at_ms: now_ms.max(at_ms) });
    }
    None
}

fn unavailable(e: StoreError) -> ErrorResponse {
    ErrorResponse::new(ErrorKind::Unavailable, format!("cannot read or write the tenant's limits: {e}"))
}

impl Quotas {
    /// The usage kept in `bucket`, shared with every process that opens the same one.
    pub fn new(bucket: Arc<dyn Bucket>) -> Quotas {
        Quotas { bucket, swept: Mutex::new(HashMap::new()) }
    }

    /// The deployment's usage, in the `sleuth_quotas` KV bucket (created if needed; `sleuth setup` creates it).
    pub async fn on_nats(
        js: &async_nats::jetstream::Context,
        subjects: &Subjects,
        replicas: usize,
    ) -> Result<Quotas, StoreError> {
        let bucket = KvBucket::open(js, &subjects.quotas_bucket(), USAGE_TTL, replicas, QUOTAS_DESCRIPTION).await?;
        Ok(Quotas::new(Arc::new(bucket)))
    }

    /// A tenant's usage and its revision (`None`: no key yet). An unreadable value is started afresh, so a
    /// corrupt key cannot lock its tenant out.
    async fn load(&self, key: &str) -> Result<(TenantUsage, Option<u64>), StoreError> {
        match self.bucket.get(key).await? {
            None => Ok((TenantUsage::default(), None)),
            Some((bytes, revision)) => match codec::decode::<TenantUsage>(&bytes) {
                Ok((usage, _)) => Ok((usage, Some(revision))),
                Err(e) => {
                    tracing::warn!(key, error = %e, "a tenant's usage is unreadable: counting it afresh");
                    Ok((TenantUsage::default(), Some(revision)))
                }
            },
        }
    }

    async fn write(&self, key: &str, usage: &TenantUsage, revision: Option<u64>) -> Result<u64, StoreError> {
        let bytes = codec::encode(usage, Encoding::MsgPack).map_err(|e| StoreError::Corrupt(e.to_string()))?;
        self.bucket.put(key, Bytes::from(bytes), revision).await
    }

    /// Whether this process should sweep `tenant` now (and, if so, notes that it does).
    fn sweep_due(&self, tenant: &str) -> bool {
        let mut swept = self.swept.lock().expect("quotas poisoned");
        let now = Instant::now();
        let due = swept.get(tenant).is_none_or(|t| now.duration_since(*t) >= SWEEP_EVERY);
        if due {
            swept.insert(tenant.to_string(), now);
        }
        due
    }

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
        let key = usage_key(&by.tenant);
        for _ in 0..CAS_ATTEMPTS {
            let (mut usage, revision) = self.load(&key).await.map_err(unavailable)?;
            let now_ms = telemetry::now_ms();
            settle(&mut usage, &[], now_ms);
            // A request id sent again before its state was stored is one request: one slot, one rate token.
            if usage.under_way.iter().any(|u| u.request_id == request_id) {
                return Ok(());
            }
            let before = usage.under_way.len();
            if wants_sweep(&usage, &limits) && self.sweep_due(&by.tenant) {
                let mut seen = Vec::with_capacity(usage.under_way.len());
                for u in &usage.under_way {
                    seen.push((u.request_id, look_up(store, u.request_id).await));
                }
                settle(&mut usage, &seen, telemetry::now_ms());
            }
            if let Some((limit, why)) = refuse(&mut usage, &limits, now_ms) {
                // What the sweep found ended is kept for the next request, if no other replica wrote first.
                if usage.under_way.len() != before {
                    let _ = self.write(&key, &usage, revision).await;
                }
                telemetry::metrics::tenant_refused(&by.tenant, limit);
                tracing::info!(tenant = %by.tenant, limit, %why, "refused a tenant's request at its limit");
                return Err(ErrorResponse::new(
                    ErrorKind::Limited,
                    format!("tenant {} is at a limit: {why} (tenants.{limit}); retry later", by.tenant),
                ));
            }
            if tracks(&limits) {
                usage.under_way.push(UnderWay { request_id, deadline_ms });
            }
            match self.write(&key, &usage, revision).await {
                Ok(_) => return Ok(()),
                Err(StoreError::Conflict) => continue,
                Err(e) => return Err(unavailable(e)),
            }
        }
        tracing::info!(tenant = %by.tenant, "too many of a tenant's requests admitted at once: refused one");
        Err(ErrorResponse::new(
            ErrorKind::Limited,
            format!("tenant {}: too many of its requests arrive at once to count them; retry later", by.tenant),
        ))
    }

    /// Frees the slot of a request that was admitted but never stored (intake could not store its state). A slot
    /// this cannot free is freed at the request's deadline.
    pub async fn release(&self, by: &Principal, request_id: Uuid) {
        let key = usage_key(&by.tenant);
        for _ in 0..CAS_ATTEMPTS {
            let Ok((mut usage, revision)) = self.load(&key).await else { return };
            let before = usage.under_way.len();
            usage.under_way.retain(|u| u.request_id != request_id);
            if usage.under_way.len() == before {
                return;
            }
            match self.write(&key, &usage, revision).await {
                Err(StoreError::Conflict) => continue,
                Ok(_) | Err(_) => return,
            }
        }
    }
}

/// Whether a request has ended, from its state. One without a state, or whose state cannot be read now, is taken
/// to be under way (the deadline prune of [`settle`] drops it at the latest).
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
            caps: caps_for(&LoopConfig::default().tiers(), analysis.route, Some(3)),
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
            Some(r) => futures::executor::block_on(store.compare_and_swap(&std::sync::Arc::new(state), r)).map(|_| ()),
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
        // On the bucket itself, with times of the test's making: no wall clock decides the outcome.
        let mut usage = TenantUsage::default();
        let limits = TenantLimits { per_second: Some(20.0), burst: Some(3), ..Default::default() };
        let start = 1_000_000;
        for _ in 0..3 {
            assert_eq!(refuse(&mut usage, &limits, start), None);
        }
        let refused = refuse(&mut usage, &limits, start).map(|(limit, _)| limit);
        assert_eq!(refused, Some("per_second"), "the burst of 3 is spent");
        assert_eq!(refuse(&mut usage, &limits, start + 30).map(|(l, _)| l), Some("per_second"));
        assert_eq!(refuse(&mut usage, &limits, start + 60), None, "a twentieth of a second refills one");
        assert!(refuse(&mut usage, &limits, start + 61).is_some(), "and only one");
        assert!(refuse(&mut usage, &limits, start + 40).is_some(), "a replica whose clock is behind refills nothing");
        assert_eq!(refuse(&mut usage, &limits, start + 10_000), None, "a long pause refills the burst");
        assert!(usage.under_way.is_empty(), "a rate alone keeps no requests");
    }

    #[test]
    fn replicas_sharing_one_bucket_admit_what_one_would() {
        // Two intake processes (two `Quotas`) over one bucket, as two replicas over the sleuth_quotas KV bucket.
        let bucket: Arc<dyn Bucket> = Arc::new(MemoryBucket::new(None));
        let (one, two) = (Quotas::new(bucket.clone()), Quotas::new(bucket));
        let store = MemoryStore::default();
        let beta = Principal::tenant("BETA");
        let limits = TenantLimits { max_under_way: Some(2), ..Default::default() };
        let first = ask(&one, &store, &beta, limits).unwrap();
        ask(&two, &store, &beta, limits).unwrap();
        assert_eq!(ask(&one, &store, &beta, limits), Err(ErrorKind::Limited));
        assert_eq!(ask(&two, &store, &beta, limits), Err(ErrorKind::Limited), "the other replica counts both");
        stored(&store, first, 0, true);
        std::thread::sleep(SWEEP_EVERY);
        assert!(ask(&two, &store, &beta, limits).is_ok(), "a request ended on one replica frees the other's slot");

        let rate = TenantLimits { per_second: Some(0.001), burst: Some(2), ..Default::default() };
        let alpha = Principal::tenant("ALPHA");
        assert!(ask(&one, &store, &alpha, rate).is_ok());
        assert!(ask(&two, &store, &alpha, rate).is_ok());
        assert_eq!(ask(&one, &store, &alpha, rate), Err(ErrorKind::Limited), "one burst for the deployment");
    }

    #[test]
    fn a_request_id_sent_again_before_it_is_stored_is_one_request() {
        let (quotas, store) = (Quotas::default(), MemoryStore::default());
        let beta = Principal::tenant("BETA");
        let limits =
            TenantLimits { max_under_way: Some(2), per_second: Some(0.001), burst: Some(2), ..Default::default() };
        let (id, deadline) = (Uuid::now_v7(), telemetry::now_ms() + 60_000);
        for _ in 0..3 {
            futures::executor::block_on(quotas.admit(&store, Some(&beta), limits, id, deadline)).unwrap();
        }
        assert!(ask(&quotas, &store, &beta, limits).is_ok(), "the re-sent id took neither a slot nor a rate token");
    }

    #[test]
    fn a_corrupt_usage_is_counted_afresh() {
        let bucket: Arc<dyn Bucket> = Arc::new(MemoryBucket::new(None));
        futures::executor::block_on(bucket.put("BETA", Bytes::from_static(b"\xc1garbage"), None)).unwrap();
        let (quotas, store) = (Quotas::new(bucket), MemoryStore::default());
        let limits = TenantLimits { max_under_way: Some(1), ..Default::default() };
        assert!(ask(&quotas, &store, &Principal::tenant("BETA"), limits).is_ok());
        assert_eq!(ask(&quotas, &store, &Principal::tenant("BETA"), limits), Err(ErrorKind::Limited));
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
        futures::executor::block_on(quotas.release(&beta, first));
        assert!(ask(&quotas, &store, &beta, limits).is_ok(), "a released slot is free");
    }

    #[test]
    fn a_request_long_past_its_deadline_holds_no_slot() {
        let mut usage = TenantUsage::default();
        let now_ms = telemetry::now_ms();
        let old = UnderWay { request_id: Uuid::now_v7(), deadline_ms: now_ms - DEADLINE_GRACE_MS - 1 };
        usage.under_way = vec![old, UnderWay { request_id: Uuid::now_v7(), deadline_ms: now_ms }];
        settle(&mut usage, &[], now_ms);
        assert_eq!(usage.under_way.len(), 1);
    }
}
