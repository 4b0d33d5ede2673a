//! Subject, stream, consumer and bucket names, all derived from one configurable prefix (default `sleuth.v1`).

use uuid::Uuid;

use crate::envelope::Stage;

pub const DEFAULT_PREFIX: &str = "sleuth.v1";
/// The deadline timers (a WorkQueue stream; its name is older than the loop bucket that took the stages' work).
pub const WORK_STREAM: &str = "SLEUTH_WORK";
/// Every request's loop: its state and its work, one JetStream KV bucket (see [`Subjects::loop_of`]), whose
/// keys are `<request_id>.state`, `<request_id>.<stage>` and `<request_id>.<stage>.<slot>`.
pub const LOOPS_BUCKET: &str = "sleuth_loops";
pub const EVENTS_STREAM: &str = "SLEUTH_EVENTS";
/// Where a dead work message is kept, for an operator to read or re-publish.
pub const DEAD_STREAM: &str = "SLEUTH_DEAD";
pub const CONVERSATIONS_BUCKET: &str = "sleuth_conversations";
pub const META_BUCKET: &str = "sleuth_meta";
pub const QUOTAS_BUCKET: &str = "sleuth_quotas";

/// A message of the loop bucket: whose, and what it is.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct LoopSubject {
    pub request_id: Uuid,
    pub kind: LoopKind,
}

#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum LoopKind {
    /// The state alone ([`Subjects::loop_state`]).
    State,
    /// Work for a stage, carrying the state it commits ([`Subjects::loop_commit`]).
    Commit(Stage),
    /// Work for a stage and its action slot, sent after the commit ([`Subjects::loop_work`]).
    Work(Stage, u32),
}

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
    /// What the deadline-timer stream holds (`<prefix>.work.>`: only the timers, [`Subjects::deadline`], are
    /// published there now).
    pub fn work_all(&self) -> String {
        format!("{}.work.>", self.prefix)
    }
    /// Everything one request's loop has written: the keys `<request_id>.*` of the loop bucket, on the subject
    /// `$KV.<bucket>.<request_id>.*`. The last message on it is the request's state, and its stream sequence the
    /// state's revision: every write to it expects that revision (`Nats-Expected-Last-Subject-Sequence` with this
    /// subject), so a write is a compare-and-swap.
    pub fn loop_of(&self, request_id: Uuid) -> String {
        format!("$KV.{}.{request_id}.*", self.loops_bucket())
    }
    /// A commit of the state alone (a join that waits for a sibling, an ending): key `<request_id>.state`.
    pub fn loop_state(&self, request_id: Uuid) -> String {
        format!("$KV.{}.{}", self.loops_bucket(), Self::state_key(request_id))
    }
    /// The loop bucket's key of a request's state alone, `<request_id>.state`: where a finished request's final
    /// state is (`nats kv get sleuth_loops <id>.state`).
    pub fn state_key(request_id: Uuid) -> String {
        format!("{request_id}.state")
    }
    /// Work for `stage` that is also the commit of the state it carries: one write per hop (key
    /// `<request_id>.<stage>`).
    pub fn loop_commit(&self, stage: Stage, request_id: Uuid) -> String {
        format!("$KV.{}.{request_id}.{stage}", self.loops_bucket())
    }
    /// Work for `stage` sent after its commit (a turn's second action; a re-send), key
    /// `<request_id>.<stage>.<slot>`: outside [`Subjects::loop_of`], so it never becomes the request's state.
    pub fn loop_work(&self, stage: Stage, request_id: Uuid, step: u32) -> String {
        format!("$KV.{}.{request_id}.{stage}.{step}", self.loops_bucket())
    }
    /// The work of `stage`, both kinds: what its consumer takes.
    pub fn loop_filters(&self, stage: Stage) -> Vec<String> {
        let bucket = self.loops_bucket();
        vec![format!("$KV.{bucket}.*.{stage}"), format!("$KV.{bucket}.*.{stage}.*")]
    }
    pub fn loops_all(&self) -> String {
        format!("$KV.{}.>", self.loops_bucket())
    }
    /// Reads a subject of the loop bucket.
    pub fn parse_loop(&self, subject: &str) -> Option<LoopSubject> {
        let rest = subject.strip_prefix("$KV.")?.strip_prefix(self.loops_bucket().as_str())?.strip_prefix('.')?;
        let mut tokens = rest.split('.');
        let request_id = Uuid::parse_str(tokens.next()?).ok()?;
        let kind = match (tokens.next()?, tokens.next(), tokens.next()) {
            ("state", None, _) => LoopKind::State,
            (stage, None, _) => LoopKind::Commit(Stage::parse(stage)?),
            (stage, Some(step), None) => LoopKind::Work(Stage::parse(stage)?, step.parse().ok()?),
            _ => return None,
        };
        Some(LoopSubject { request_id, kind })
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
    /// The loop bucket: every request's state and work.
    pub fn loops_bucket(&self) -> String {
        format!("{LOOPS_BUCKET}{}", self.suffix)
    }
    /// The stream behind the loop bucket, `KV_<bucket>`, which the stages' consumers read.
    pub fn loops_stream(&self) -> String {
        format!("KV_{}", self.loops_bucket())
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
        assert_eq!(s.loop_of(id), format!("$KV.sleuth_loops.{id}.*"));
        assert_eq!(s.loop_state(id), format!("$KV.sleuth_loops.{id}.state"));
        assert_eq!(Subjects::state_key(id), format!("{id}.state"));
        assert_eq!(s.loop_commit(Stage::Planner, id), format!("$KV.sleuth_loops.{id}.planner"));
        assert_eq!(s.loop_work(Stage::Retrieve, id, 1), format!("$KV.sleuth_loops.{id}.retrieve.1"));
        assert_eq!(s.loop_filters(Stage::Grader), ["$KV.sleuth_loops.*.grader", "$KV.sleuth_loops.*.grader.*"]);
        assert_eq!(s.loops_bucket(), "sleuth_loops");
        assert_eq!(s.loops_stream(), "KV_sleuth_loops");
        assert_eq!(s.events(id), format!("sleuth.v1.events.{id}"));
        assert_eq!(s.work_stream(), "SLEUTH_WORK");
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

    #[test]
    fn loop_subjects_read_back_as_what_they_name() {
        let s = Subjects::new("acme.sleuth.v1", "_t");
        let id = Uuid::now_v7();
        let read = |subject: String| s.parse_loop(&subject).map(|l| (l.request_id, l.kind));
        assert_eq!(read(s.loop_state(id)), Some((id, LoopKind::State)));
        assert_eq!(read(s.loop_commit(Stage::Graph, id)), Some((id, LoopKind::Commit(Stage::Graph))));
        assert_eq!(read(s.loop_work(Stage::Retrieve, id, 1)), Some((id, LoopKind::Work(Stage::Retrieve, 1))));
        for bad in [
            format!("$KV.sleuth_loops.{id}.state"),
            format!("$KV.sleuth_loops_tt.{id}.state"),
            format!("$KV.sleuth_loops_t.{id}.oracle"),
            format!("$KV.sleuth_loops_t.{id}.retrieve.one"),
            format!("$KV.sleuth_loops_t.{id}.retrieve.1.2"),
            format!("$KV.sleuth_loops_t.{id}"),
            "$KV.sleuth_loops_t.not-a-uuid.state".to_string(),
            format!("acme.sleuth.v1.loop.{id}.state"),
            format!("acme.sleuth.v1.work.planner.{id}"),
        ] {
            assert_eq!(s.parse_loop(&bad), None, "{bad}");
        }
    }
}
