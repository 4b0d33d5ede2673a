//! Who may read what: a document or graph entity's [`Ownership`] (an owner tenant and reader groups) is stored as
//! its *readers*, and a requester's [`Access`] is the set of reader keys it holds. Every read on a request's
//! behalf (searches, fetches, traversals, hydration, typeahead, `database_stats`) is restricted to what its
//! `Access` may read, in the backend's own query.
//!
//! A thing with no owner has no readers and is shared with everyone. An owned one is readable by its owner tenant
//! (every user of it) and by the members of its groups (`tenants.groups`: tenants, or `tenant/user`). A request
//! without a principal (sleuth's own account, the embedded default) holds no keys: it reads shared things only,
//! so a connection that is no tenant never sees a tenant's documents.

use std::collections::BTreeMap;

use sleuth_messages::Principal;

/// The longest tenant or group name kept, as for NATS account names.
const MAX_NAME_CHARS: usize = 64;

/// Who owns a document or an entity, and which groups may also read it.
#[derive(Debug, Clone, Default, PartialEq, Eq)]
pub struct Ownership {
    /// The owner tenant, lowercased; `None`: shared with every tenant.
    pub tenant: Option<String>,
    /// Reader groups, lowercased, sorted, without duplicates.
    pub groups: Vec<String>,
}

impl Ownership {
    /// Shared with everyone.
    pub fn shared() -> Ownership {
        Ownership::default()
    }

    /// An owner and its groups, checked: names are 1 to 64 letters, digits, `_` or `-` (compared without case),
    /// and groups need an owner (a shared document is already readable by every group).
    pub fn new(tenant: Option<&str>, groups: &[String]) -> Result<Ownership, String> {
        let tenant = tenant.map(|t| checked("tenant", t)).transpose()?;
        let mut groups = groups.iter().map(|g| checked("group", g)).collect::<Result<Vec<_>, _>>()?;
        groups.sort();
        groups.dedup();
        if tenant.is_none() && !groups.is_empty() {
            return Err("reader groups need an owner tenant: a document without one is shared with everyone".into());
        }
        Ok(Ownership { tenant, groups })
    }

    /// The reader keys stored with the thing: none when it is shared.
    pub fn readers(&self) -> Vec<String> {
        let Some(tenant) = &self.tenant else { return Vec::new() };
        std::iter::once(tenant_key(tenant)).chain(self.groups.iter().map(|g| group_key(g))).collect()
    }

    /// This ownership, unless `other` names a different owner (the two must agree where both say).
    pub fn merge(self, other: &Ownership) -> Result<Ownership, String> {
        match (&self.tenant, &other.tenant) {
            (Some(a), Some(b)) if a != b => Err(format!("owned by {a:?} here and by {b:?} on the command line")),
            (None, None) => Ok(self),
            _ => {
                let tenant = self.tenant.as_deref().or(other.tenant.as_deref());
                let groups: Vec<String> = self.groups.iter().chain(&other.groups).cloned().collect();
                Ownership::new(tenant, &groups)
            }
        }
    }
}

/// What a requester may read: the reader keys it holds. No keys: shared things only.
#[derive(Debug, Clone, Default, PartialEq, Eq, Hash)]
pub struct Access {
    keys: Vec<String>,
    /// Everything, whoever owns it: an operator's own command (listing the graph's entity types), never a request.
    all: bool,
}

impl Access {
    /// Shared things only: the access of a request with no principal.
    pub fn shared() -> Access {
        Access::default()
    }

    /// Everything: for an operator's command on the deployment's own data, never for a request.
    pub fn everything() -> Access {
        Access { keys: Vec::new(), all: true }
    }

    /// Whether this is [`Access::everything`].
    pub fn is_everything(&self) -> bool {
        self.all
    }

    /// The access of `by` (`None`: sleuth's own account) under `groups` (`tenants.groups`: group → members, each
    /// a tenant or `tenant/user`, compared without case).
    pub fn of(by: Option<&Principal>, groups: &BTreeMap<String, Vec<String>>) -> Access {
        let Some(by) = by else { return Access::shared() };
        let tenant = by.tenant.to_lowercase();
        let user = by.user.as_ref().map(|u| format!("{tenant}/{}", u.to_lowercase()));
        let mut keys = vec![tenant_key(&tenant)];
        for (group, members) in groups {
            let member = |m: &String| {
                let m = m.trim().to_lowercase();
                m == tenant || user.as_deref() == Some(m.as_str())
            };
            if members.iter().any(member) {
                keys.push(group_key(&group.to_lowercase()));
            }
        }
        keys.sort();
        keys.dedup();
        Access { keys, all: false }
    }

    /// The reader keys held, sorted; empty for shared-only access.
    pub fn keys(&self) -> &[String] {
        &self.keys
    }

    /// Whether something with these readers may be read.
    pub fn may_read(&self, readers: &[String]) -> bool {
        self.all || readers.is_empty() || readers.iter().any(|r| self.keys.binary_search(r).is_ok())
    }

    /// A short stable string for cache keys: results under two accesses never share an entry.
    pub fn cache_key(&self) -> String {
        if self.all { "*".to_string() } else { self.keys.join(",") }
    }
}

/// The owner tenant that `readers` (as [`Ownership::readers`] wrote them) name, lowercased; `None` when shared.
pub fn owner_of(readers: &[String]) -> Option<&str> {
    readers.iter().find_map(|r| r.strip_prefix("tenant:"))
}

fn tenant_key(tenant: &str) -> String {
    format!("tenant:{tenant}")
}

fn group_key(group: &str) -> String {
    format!("group:{group}")
}

fn checked(what: &str, name: &str) -> Result<String, String> {
    let name = name.trim();
    let valid = !name.is_empty()
        && name.chars().count() <= MAX_NAME_CHARS
        && name.chars().all(|c| c.is_ascii_alphanumeric() || c == '_' || c == '-');
    if valid {
        Ok(name.to_lowercase())
    } else {
        Err(format!("{what} {name:?}: must be 1 to {MAX_NAME_CHARS} letters, digits, '_' or '-'"))
    }
}

/// Checks `tenants.groups`: valid group names, members that are tenants or `tenant/user`.
pub fn check_groups(groups: &BTreeMap<String, Vec<String>>) -> Result<(), String> {
    for (group, members) in groups {
        checked("tenants.groups: group", group)?;
        for member in members {
            let mut parts = member.splitn(2, '/');
            checked(&format!("tenants.groups.{group}: member tenant"), parts.next().unwrap_or(""))?;
            if let Some(user) = parts.next() {
                checked(&format!("tenants.groups.{group}: member user"), user)?;
            }
        }
    }
    Ok(())
}

#[cfg(test)]
mod tests {
    use super::*;

    fn groups() -> BTreeMap<String, Vec<String>> {
        let mut g = BTreeMap::new();
        g.insert("Finance".to_string(), vec!["beta".to_string()]);
        g.insert("audit".to_string(), vec!["GAMMA/svc-1".to_string()]);
        g
    }

    #[test]
    fn an_owner_and_its_groups_read_an_owned_document_and_nobody_else_does() {
        let owned = Ownership::new(Some("ALPHA"), &["finance".into(), "audit".into()]).unwrap().readers();
        assert_eq!(owned, ["tenant:alpha", "group:audit", "group:finance"]);
        let alpha = Access::of(Some(&Principal::tenant("alpha")), &groups());
        let beta = Access::of(Some(&Principal::tenant("BETA")), &groups());
        let gamma = Access::of(Some(&Principal::tenant("GAMMA")), &groups());
        let gamma_svc = Access::of(Some(&Principal { tenant: "gamma".into(), user: Some("SVC-1".into()) }), &groups());
        assert!(alpha.may_read(&owned) && beta.may_read(&owned) && gamma_svc.may_read(&owned));
        assert!(!gamma.may_read(&owned), "a group given to one user of gamma is not gamma's");
        assert!(!Access::of(None, &groups()).may_read(&owned), "no principal reads shared things only");
        let alone = Ownership::new(Some("alpha"), &[]).unwrap().readers();
        assert!(!beta.may_read(&alone));
        assert_eq!((owner_of(&owned), owner_of(&[])), (Some("alpha"), None));
        assert!(Access::shared().may_read(&Ownership::shared().readers()));
        assert_ne!(alpha.cache_key(), beta.cache_key());
    }

    #[test]
    fn bad_names_and_groups_without_an_owner_are_refused() {
        assert!(Ownership::new(None, &["finance".into()]).unwrap_err().contains("need an owner"));
        assert!(Ownership::new(Some("al pha"), &[]).unwrap_err().contains("tenant \"al pha\""));
        assert!(Ownership::new(Some("alpha"), &["".into()]).is_err());
        let a = Ownership::new(Some("alpha"), &[]).unwrap();
        assert!(a.clone().merge(&Ownership::new(Some("beta"), &[]).unwrap()).is_err());
        let merged = Ownership::shared().merge(&Ownership::new(Some("alpha"), &["g".into()]).unwrap()).unwrap();
        assert_eq!(merged.readers(), ["tenant:alpha", "group:g"]);
        let mut bad = BTreeMap::new();
        bad.insert("g".to_string(), vec!["alpha/".to_string()]);
        assert!(check_groups(&bad).is_err());
        assert!(check_groups(&groups()).is_ok());
    }
}
