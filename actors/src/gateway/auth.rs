//! Who is calling the gateway: an API key (`Authorization: Bearer <key>` or `X-API-Key`) maps to the tenant it
//! was issued for, the same [`Principal`] a NATS account of that name is. Keys are kept as SHA-256 digests only.
//! With no key configured, a gateway on a loopback address serves its caller as the deployment's own account
//! (the embedded default on a laptop); anywhere else it does not start.

use std::{collections::HashMap, net::SocketAddr};

use anyhow::Context;
use axum::http::HeaderMap;
use sha2::{Digest, Sha256};
use sleuth_messages::Principal;

use crate::config::GatewayConfig;

/// The accepted keys, by digest.
pub struct Keys {
    by_digest: HashMap<[u8; 32], Principal>,
}

/// Why a request is refused: no key, or one that is not accepted.
#[derive(Debug)]
pub struct Refused(pub &'static str);

impl Keys {
    /// The keys of `config.api_keys` and `config.api_keys_file`. Refuses a malformed entry, and an empty key set
    /// on an address other than loopback.
    pub fn load(config: &GatewayConfig, addr: SocketAddr) -> anyhow::Result<Keys> {
        let mut entries: Vec<(String, String)> =
            config.api_keys.iter().map(|k| (k.sha256.clone(), k.tenant.clone())).collect();
        if let Some(path) = config.api_keys_file.as_ref().filter(|p| !p.as_os_str().is_empty()) {
            let text = std::fs::read_to_string(path)
                .with_context(|| format!("cannot read gateway.api_keys_file {}", path.display()))?;
            for (n, line) in text.lines().enumerate() {
                let line = line.split('#').next().unwrap_or_default().trim();
                if line.is_empty() {
                    continue;
                }
                let mut fields = line.split_whitespace();
                match (fields.next(), fields.next(), fields.next()) {
                    (Some(digest), Some(tenant), None) => entries.push((digest.into(), tenant.into())),
                    _ => anyhow::bail!("{} line {}: expected `<sha256 hex> <tenant>`", path.display(), n + 1),
                }
            }
        }
        let mut by_digest = HashMap::new();
        for (digest, tenant) in entries {
            let mut bytes = [0u8; 32];
            hex::decode_to_slice(digest.trim(), &mut bytes)
                .with_context(|| format!("gateway key for tenant {tenant}: not a SHA-256 in hex"))?;
            let info = serde_json::json!({ "acc": tenant }).to_string();
            let principal = Principal::from_request_info(&info).map_err(|_| {
                anyhow::anyhow!("gateway key: invalid tenant name {tenant:?} (letters, digits, _ and -)")
            })?;
            by_digest.insert(bytes, principal);
        }
        anyhow::ensure!(
            !by_digest.is_empty() || addr.ip().is_loopback() || config.allow_without_keys,
            "the gateway listens on {addr}, which is not a loopback address, and has no API keys: set \
             gateway.api_keys or gateway.api_keys_file (SLEUTH__GATEWAY__API_KEYS_FILE), listen on 127.0.0.1, or set \
             gateway.allow_without_keys when only a proxy reaches it"
        );
        Ok(Keys { by_digest })
    }

    /// Whether a request needs a key.
    pub fn required(&self) -> bool {
        !self.by_digest.is_empty()
    }

    /// The caller of a request: `Ok(None)` is the deployment's own account (no keys configured, loopback).
    pub fn principal(&self, headers: &HeaderMap) -> Result<Option<Principal>, Refused> {
        if self.by_digest.is_empty() {
            return Ok(None);
        }
        let bearer = headers
            .get(axum::http::header::AUTHORIZATION)
            .and_then(|v| v.to_str().ok())
            .and_then(|v| v.strip_prefix("Bearer ").or_else(|| v.strip_prefix("bearer ")));
        let key = bearer.or_else(|| headers.get("x-api-key").and_then(|v| v.to_str().ok()));
        let Some(key) = key.map(str::trim).filter(|k| !k.is_empty()) else {
            return Err(Refused("an API key is required: Authorization: Bearer <key>"));
        };
        let digest: [u8; 32] = Sha256::digest(key.as_bytes()).into();
        self.by_digest.get(&digest).cloned().map(Some).ok_or(Refused("this API key is not accepted"))
    }
}

/// The digest to configure for `key` (`sha256` of an `api_keys` entry).
pub fn digest_of(key: &str) -> String {
    hex::encode(Sha256::digest(key.as_bytes()))
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::config::ApiKey;

    fn config(keys: &[(&str, &str)]) -> GatewayConfig {
        GatewayConfig {
            api_keys: keys.iter().map(|(k, t)| ApiKey { sha256: digest_of(k), tenant: t.to_string() }).collect(),
            ..Default::default()
        }
    }

    fn headers(pairs: &[(&'static str, &str)]) -> HeaderMap {
        let mut h = HeaderMap::new();
        for (k, v) in pairs {
            h.insert(*k, v.parse().unwrap());
        }
        h
    }

    #[test]
    fn a_key_maps_to_its_tenant_and_nothing_else_gets_in() {
        let keys =
            Keys::load(&config(&[("k-alpha", "ALPHA"), ("k-beta", "BETA")]), "0.0.0.0:1".parse().unwrap()).unwrap();
        let alpha = keys.principal(&headers(&[("authorization", "Bearer k-alpha")])).unwrap();
        assert_eq!(alpha, Some(Principal::tenant("ALPHA")));
        let beta = keys.principal(&headers(&[("x-api-key", "k-beta")])).unwrap();
        assert_eq!(beta, Some(Principal::tenant("BETA")));
        assert!(keys.principal(&headers(&[])).is_err());
        assert!(keys.principal(&headers(&[("authorization", "Bearer k-gamma")])).is_err());
        assert!(keys.principal(&headers(&[("authorization", "Basic k-alpha")])).is_err());
    }

    #[test]
    fn without_keys_only_loopback_is_served() {
        let none = config(&[]);
        let keys = Keys::load(&none, "127.0.0.1:8080".parse().unwrap()).unwrap();
        assert_eq!(keys.principal(&headers(&[])).unwrap(), None);
        assert!(Keys::load(&none, "0.0.0.0:8080".parse().unwrap()).is_err());
        let proxied = GatewayConfig { allow_without_keys: true, ..Default::default() };
        assert!(Keys::load(&proxied, "0.0.0.0:8080".parse().unwrap()).is_ok());
    }

    #[test]
    fn a_bad_entry_is_refused_at_start() {
        let bad_digest = GatewayConfig {
            api_keys: vec![ApiKey { sha256: "xyz".into(), tenant: "ALPHA".into() }],
            ..Default::default()
        };
        assert!(Keys::load(&bad_digest, "127.0.0.1:1".parse().unwrap()).is_err());
        assert!(Keys::load(&config(&[("k", "AL PHA")]), "127.0.0.1:1".parse().unwrap()).is_err());
    }
}
