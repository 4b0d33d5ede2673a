//! [`TenantUsage`]: what one tenant has under way and has spent, as every intake replica sees it. It lives in the
//! `sleuth_quotas` KV bucket, one key per tenant, written with compare-and-swap, so a tenant's limits hold for the
//! deployment however many intake replicas admit its requests.

use serde::{Deserialize, Serialize};
use uuid::Uuid;

/// A request admitted and not yet known to have ended.
#[derive(Debug, Clone, Copy, PartialEq, Serialize, Deserialize)]
pub struct UnderWay {
    pub request_id: Uuid,
    /// Its deadline, ms since the epoch: it holds no slot long after it.
    pub deadline_ms: u64,
}

/// The requests-a-second token bucket: how many requests it holds, as of `at_ms` (ms since the epoch).
#[derive(Debug, Clone, Copy, PartialEq, Serialize, Deserialize)]
pub struct RateBucket {
    #[serde(deserialize_with = "crate::finite::f64")]
    pub held: f64,
    pub at_ms: u64,
}

#[derive(Debug, Clone, Default, PartialEq, Serialize, Deserialize)]
pub struct TenantUsage {
    #[serde(default)]
    pub under_way: Vec<UnderWay>,
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub rate: Option<RateBucket>,
    /// The UTC day (days since the epoch) `tokens` counts.
    #[serde(default)]
    pub day: u64,
    /// The LLM tokens that day's ended requests spent.
    #[serde(default)]
    pub tokens: u64,
}

/// The KV key of a tenant's usage: the name itself when it has only `[A-Za-z0-9_-]` (NATS account names do),
/// else `x.` and its bytes in hex. A plain key has no dot, so no name can reach another's key or be refused by
/// the bucket.
pub fn usage_key(tenant: &str) -> String {
    let plain = !tenant.is_empty() && tenant.bytes().all(|b| b.is_ascii_alphanumeric() || matches!(b, b'_' | b'-'));
    if plain {
        tenant.to_string()
    } else {
        format!("x.{}", tenant.bytes().map(|b| format!("{b:02x}")).collect::<String>())
    }
}
