//! Subject, stream, consumer and bucket names, all derived from one configurable prefix (default `sleuth.v1`).

use uuid::Uuid;

use crate::envelope::Stage;

pub const DEFAULT_PREFIX: &str = "sleuth.v1";
pub const WORK_STREAM: &str = "SLEUTH_WORK";
pub const EVENTS_STREAM: &str = "SLEUTH_EVENTS";
/// Where a dead work message is kept, for an operator to read or re-publish.
pub const DEAD_STREAM: &str = "SLEUTH_DEAD";
pub const LOOPS_BUCKET: &str = "sleuth_loops";
pub const CONVERSATIONS_BUCKET: &str = "sleuth_conversations";
pub const META_BUCKET: &str = "sleuth_meta";
pub const QUOTAS_BUCKET: &str = "sleuth_quotas";

/// Names for one deployment. Tests use a unique prefix and suffix so they can share a server.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Subjects {
    pub prefix: String,
    /// Appended to stream, consumer and bucket names (empty in production).
    pub suffix: String,
}

impl Default for Subjects {
    fn default() -> Self {
        Subjects { prefix: DEFAULT_PREFIX.to_string(), suffix: String::new() }
    }
}

impl Subjects {
    pub fn new(prefix: impl Into<String>, suffix: impl Into<String>) -> Subjects {
        Subjects { prefix: prefix.into(), suffix: suffix.into() }
    }

    pub fn ask(&self) -> String {
        format!("{}.ask", self.prefix)
    }
    pub fn search(&self) -> String {
        format!("{}.search", self.prefix)
    }
    pub fn hydrate(&self) -> String {
        format!("{}.hydrate", self.prefix)
    }
    pub fn work(&self, stage: Stage, request_id: Uuid) -> String {
        format!("{}.work.{}.{}", self.prefix, stage, request_id)
    }
    pub fn work_filter(&self, stage: Stage) -> String {
        format!("{}.work.{}.>", self.prefix, stage)
    }
    pub fn work_all(&self) -> String {
        format!("{}.work.>", self.prefix)
    }
    pub fn events(&self, request_id: Uuid) -> String {
        format!("{}.events.{}", self.prefix, request_id)
    }
    pub fn events_all(&self) -> String {
        format!("{}.events.>", self.prefix)
    }
    /// A tenant's copy of its request's events, `<prefix>.tenant.<TENANT>.events.<request_id>`: sleuth's account
    /// exports each tenant's to that tenant alone, which imports it as `<prefix>.events.>`, so its clients follow
    /// their requests on the same subjects as the deployment's own. `None` for a name that is not one subject
    /// token (a gateway key's tenant may be named anything), which gets no copy.
    pub fn tenant_events(&self, tenant: &str, request_id: Uuid) -> Option<String> {
        crate::principal::valid_name(tenant).then(|| format!("{}.tenant.{tenant}.events.{request_id}", self.prefix))
    }
    pub fn cancel(&self, request_id: Uuid) -> String {
        format!("{}.cancel.{}", self.prefix, request_id)
    }
    /// A stage's status endpoint (its counters), one per stage service.
    pub fn status(&self, stage: Stage) -> String {
        format!("{}.status.{}", self.prefix, stage)
    }
    pub fn cancel_all(&self) -> String {
        format!("{}.cancel.*", self.prefix)
    }
    /// A request's deadline timer, in the work stream under a consumer of its own (the watchdog's).
    pub fn deadline(&self, request_id: Uuid) -> String {
        format!("{}.work.watchdog.{}", self.prefix, request_id)
    }
    pub fn deadline_filter(&self) -> String {
        format!("{}.work.watchdog.>", self.prefix)
    }
    /// The durable consumer every watchdog shares.
    pub fn watchdog_consumer(&self) -> String {
        format!("sleuth_watchdog{}", self.suffix)
    }
    pub fn work_stream(&self) -> String {
        format!("{WORK_STREAM}{}", self.suffix)
    }
    pub fn events_stream(&self) -> String {
        format!("{EVENTS_STREAM}{}", self.suffix)
    }
    pub fn dead_stream(&self) -> String {
        format!("{DEAD_STREAM}{}", self.suffix)
    }
    /// The copy of a work message of `stage` that failed for good (a dead letter), in the dead-letter stream.
    pub fn dead(&self, stage: Stage, request_id: Uuid) -> String {
        format!("{}.dead.{}.{}", self.prefix, stage, request_id)
    }
    pub fn dead_all(&self) -> String {
        format!("{}.dead.>", self.prefix)
    }
    pub fn loops_bucket(&self) -> String {
        format!("{LOOPS_BUCKET}{}", self.suffix)
    }
    /// Recent turns per `conversation_id`, with a TTL.
    pub fn conversations_bucket(&self) -> String {
        format!("{CONVERSATIONS_BUCKET}{}", self.suffix)
    }
    /// Deployment-wide counters, e.g. the index generation the retrieval caches check.
    pub fn meta_bucket(&self) -> String {
        format!("{META_BUCKET}{}", self.suffix)
    }
    /// Each tenant's requests under way and spending, shared by the intake replicas (`TenantUsage`).
    pub fn quotas_bucket(&self) -> String {
        format!("{QUOTAS_BUCKET}{}", self.suffix)
    }
    pub fn consumer(&self, stage: Stage) -> String {
        format!("sleuth_{stage}{}", self.suffix)
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn default_subjects_match_the_design() {
        let s = Subjects::default();
        let id = Uuid::nil();
        assert_eq!(s.ask(), "sleuth.v1.ask");
        assert_eq!(s.work(Stage::Planner, id), format!("sleuth.v1.work.planner.{id}"));
        assert_eq!(s.work_filter(Stage::Grader), "sleuth.v1.work.grader.>");
        assert_eq!(s.events(id), format!("sleuth.v1.events.{id}"));
        assert_eq!(s.work_stream(), "SLEUTH_WORK");
        assert_eq!(s.loops_bucket(), "sleuth_loops");
        assert_eq!(s.conversations_bucket(), "sleuth_conversations");
        assert_eq!(s.meta_bucket(), "sleuth_meta");
        assert_eq!(s.quotas_bucket(), "sleuth_quotas");
        assert_eq!(s.tenant_events("ALPHA", id), Some(format!("sleuth.v1.tenant.ALPHA.events.{id}")));
        for bad in ["", "A.B", "A*", "A>", "A B"] {
            assert_eq!(s.tenant_events(bad, id), None, "{bad:?}");
        }
        assert_eq!(s.cancel(id), format!("sleuth.v1.cancel.{id}"));
        assert_eq!(s.deadline(id), format!("sleuth.v1.work.watchdog.{id}"));
        assert_eq!(s.watchdog_consumer(), "sleuth_watchdog");
    }
}
