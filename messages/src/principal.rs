//! [`Principal`]: who asks, as the NATS server vouches for it (its `Nats-Request-Info` header), never as a
//! payload claims it.
//!
//! A tenant is a NATS account that imports sleuth's `ask` and `cancel` subjects as services. When a request
//! crosses that import, nats-server sets the `Nats-Request-Info` header to the requesting account (replacing any
//! such header the client sent), so the responder learns the tenant from the server. A request from sleuth's own
//! account (its operators, or the embedded default) has no principal: it is the deployment's one implicit tenant.

use serde::{Deserialize, Serialize};

/// The header nats-server sets on a request that crossed a service import.
pub const REQUEST_INFO_HEADER: &str = "Nats-Request-Info";

/// The longest tenant or user name kept; a longer one is refused.
const MAX_NAME_CHARS: usize = 64;

/// The tenant (the requesting NATS account) and, when the server says, the user within it.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
pub struct Principal {
    pub tenant: String,
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub user: Option<String>,
}

/// The fields of `Nats-Request-Info` that name the requester (the server adds others, such as `rtt`).
#[derive(Deserialize)]
struct RequestInfo {
    acc: String,
    #[serde(default)]
    user: Option<String>,
}

impl Principal {
    pub fn tenant(tenant: impl Into<String>) -> Principal {
        Principal { tenant: tenant.into(), user: None }
    }

    /// The principal of a `Nats-Request-Info` header value. `Err` says why a present header is unusable: a
    /// request that carries one it cannot be attributed by is refused, not treated as the deployment's own.
    pub fn from_request_info(value: &str) -> Result<Principal, String> {
        let info: RequestInfo = serde_json::from_str(value)
            .map_err(|e| format!("the {REQUEST_INFO_HEADER} header is not the server's request info: {e}"))?;
        if !valid_name(&info.acc) {
            return Err(format!("the {REQUEST_INFO_HEADER} header names no valid account"));
        }
        let user = info.user.filter(|u| valid_name(u));
        Ok(Principal { tenant: info.acc, user })
    }

    /// Whether a requester (`None`: the deployment's own account) may act on, or read, what `owner` owns. The
    /// deployment's account may act on everything; a tenant only on its own (any of its users).
    pub fn may_act_on(by: Option<&Principal>, owner: Option<&Principal>) -> bool {
        match (by, owner) {
            (None, _) => true,
            (Some(by), Some(owner)) => by.tenant == owner.tenant,
            (Some(_), None) => false,
        }
    }
}

/// An account or user name as nats-server allows it in a config, kept to characters that are safe in a KV key
/// and as one subject token.
pub(crate) fn valid_name(name: &str) -> bool {
    !name.is_empty()
        && name.chars().count() <= MAX_NAME_CHARS
        && name.chars().all(|c| c.is_ascii_alphanumeric() || c == '_' || c == '-')
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn the_servers_request_info_names_the_tenant() {
        let p = Principal::from_request_info(r#"{"acc":"ALPHA","rtt":541763}"#).unwrap();
        assert_eq!(p, Principal::tenant("ALPHA"));
        let p = Principal::from_request_info(r#"{"acc":"ALPHA","user":"svc-1","rtt":1}"#).unwrap();
        assert_eq!(p.user.as_deref(), Some("svc-1"));
    }

    #[test]
    fn an_unusable_request_info_is_refused() {
        for bad in ["", "ALPHA", r#"{"rtt":1}"#, r#"{"acc":""}"#, r#"{"acc":"A/B"}"#, r#"{"acc":"A.B"}"#] {
            assert!(Principal::from_request_info(bad).is_err(), "{bad}");
        }
        let long = format!(r#"{{"acc":"{}"}}"#, "A".repeat(65));
        assert!(Principal::from_request_info(&long).is_err());
    }

    #[test]
    fn a_tenant_acts_only_on_its_own_and_the_deployment_on_all() {
        let (alpha, beta) = (Principal::tenant("ALPHA"), Principal::tenant("BETA"));
        let alpha_user = Principal { tenant: "ALPHA".into(), user: Some("u".into()) };
        assert!(Principal::may_act_on(Some(&alpha_user), Some(&alpha)));
        assert!(!Principal::may_act_on(Some(&beta), Some(&alpha)));
        assert!(!Principal::may_act_on(Some(&beta), None));
        assert!(Principal::may_act_on(None, Some(&alpha)));
        assert!(Principal::may_act_on(None, None));
    }
}
