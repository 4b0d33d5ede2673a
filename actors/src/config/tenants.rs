//! The `tenants` section: each tenant's limits on what it may ask of intake (requests under way, requests a
//! second, LLM tokens a day), the same for every tenant unless a tenant has its own, and the reader groups that
//! owned documents and entities may be given to (`crate::access`).

use std::collections::BTreeMap;

use serde::{Deserialize, Serialize};

/// Limits for tenants: the requests of a NATS account other than sleuth's own (`messages/src/principal.rs`), or
/// of a gateway API key's tenant. The deployment's own account, and the embedded default, have none.
#[derive(Debug, Clone, Default, Serialize, Deserialize)]
#[serde(deny_unknown_fields, default)]
pub struct TenantsConfig {
    /// Every tenant's limits; unset means no limit.
    pub limits: TenantLimits,
    /// A tenant's own limits, by account name (compared without case, as environment variables lowercase it);
    /// what a tenant leaves unset comes from `limits`.
    pub overrides: BTreeMap<String, TenantLimits>,
    /// Reader groups: a group's name and its members, each a tenant (every user of it) or `tenant/user`. A
    /// document or entity given to a group is readable by its members as well as by its owner.
    pub groups: BTreeMap<String, Vec<String>>,
}

/// What one tenant may ask of the deployment. Every intake replica counts in the same `sleuth_quotas` bucket
/// (`tenancy/quota.rs`), so these hold however many replicas admit the tenant's requests.
#[derive(Debug, Clone, Copy, Default, PartialEq, Serialize, Deserialize)]
#[serde(deny_unknown_fields, default)]
pub struct TenantLimits {
    /// Requests admitted and not yet ended.
    pub max_under_way: Option<u32>,
    /// Requests admitted a second, on average; `burst` more may come at once.
    pub per_second: Option<f64>,
    /// Requests admitted at once above the average (a token bucket of `burst` requests, at least 1).
    pub burst: Option<u32>,
    /// LLM tokens (input and output) the tenant's ended requests may spend in a UTC day before new requests are
    /// refused. A request under way is not cut short.
    pub llm_tokens_per_day: Option<u64>,
}

impl TenantLimits {
    /// These limits, with what they leave unset taken from `base`.
    pub fn or(self, base: TenantLimits) -> TenantLimits {
        TenantLimits {
            max_under_way: self.max_under_way.or(base.max_under_way),
            per_second: self.per_second.or(base.per_second),
            burst: self.burst.or(base.burst),
            llm_tokens_per_day: self.llm_tokens_per_day.or(base.llm_tokens_per_day),
        }
    }

    /// Whether anything is limited.
    pub fn any(&self) -> bool {
        self.max_under_way.is_some() || self.per_second.is_some() || self.llm_tokens_per_day.is_some()
    }
}

impl TenantsConfig {
    /// The limits of `tenant`.
    pub fn limits_of(&self, tenant: &str) -> TenantLimits {
        match self.overrides.iter().find(|(name, _)| name.eq_ignore_ascii_case(tenant)) {
            Some((_, own)) => own.or(self.limits),
            None => self.limits,
        }
    }

    /// What figment cannot check: a rate that is a positive finite number, a burst of at least one.
    pub fn check(&self) -> Result<(), String> {
        for (who, l) in std::iter::once(("tenants.limits".to_string(), &self.limits))
            .chain(self.overrides.iter().map(|(name, l)| (format!("tenants.overrides.{name}"), l)))
        {
            if l.per_second.is_some_and(|r| !(r.is_finite() && r > 0.0)) {
                return Err(format!("{who}.per_second: must be a positive number (leave it unset for no limit)"));
            }
            if l.burst == Some(0) {
                return Err(format!("{who}.burst: must be at least 1"));
            }
        }
        crate::access::check_groups(&self.groups)
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn a_tenants_own_limits_fall_back_to_everyones_and_names_ignore_case() {
        let mut config = TenantsConfig {
            limits: TenantLimits { max_under_way: Some(8), per_second: Some(5.0), ..Default::default() },
            ..Default::default()
        };
        config.overrides.insert("alpha".into(), TenantLimits { max_under_way: Some(2), ..Default::default() });
        let alpha = config.limits_of("ALPHA");
        assert_eq!((alpha.max_under_way, alpha.per_second), (Some(2), Some(5.0)));
        assert_eq!(config.limits_of("BETA").max_under_way, Some(8));
        assert!(!TenantLimits::default().any());
        config.overrides.insert("beta".into(), TenantLimits { burst: Some(0), ..Default::default() });
        assert!(config.check().unwrap_err().contains("tenants.overrides.beta.burst"));
    }
}
