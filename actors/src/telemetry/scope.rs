//! The request, turn and stage a task is working for, so every span it opens carries `sleuth.request_id`,
//! `sleuth.turn` and `sleuth.stage` without each caller passing them down (the graph store, the index and the
//! LLM client know nothing of requests).

use std::future::Future;

use uuid::Uuid;

#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct Scope {
    pub request_id: Uuid,
    pub turn: u32,
    pub stage: &'static str,
}

tokio::task_local! {
    static SCOPE: Scope;
}

/// The scope of the running task, if it works for a request.
pub fn current() -> Option<Scope> {
    SCOPE.try_with(|s| *s).ok()
}

/// Runs `work` with `scope` as the task's scope.
pub async fn within<F: Future>(scope: Scope, work: F) -> F::Output {
    SCOPE.scope(scope, work).await
}

/// An `info` span that carries the task's [`Scope`] as `sleuth.request_id`, `sleuth.turn` and `sleuth.stage`,
/// plus the fields given: `scoped_span!("kv.cas", sleuth.kv.revision = rev)`.
#[macro_export]
macro_rules! scoped_span {
    ($name:literal) => {{
        let scope = $crate::telemetry::scope::current();
        ::tracing::info_span!(
            $name,
            sleuth.request_id = scope.map(|s| ::tracing::field::display(s.request_id)),
            sleuth.turn = scope.map(|s| s.turn),
            sleuth.stage = scope.map(|s| s.stage)
        )
    }};
    ($name:literal, $($fields:tt)*) => {{
        let scope = $crate::telemetry::scope::current();
        ::tracing::info_span!(
            $name,
            sleuth.request_id = scope.map(|s| ::tracing::field::display(s.request_id)),
            sleuth.turn = scope.map(|s| s.turn),
            sleuth.stage = scope.map(|s| s.stage),
            $($fields)*
        )
    }};
}

#[cfg(test)]
mod tests {
    use super::*;

    #[tokio::test]
    async fn the_scope_is_visible_inside_and_gone_outside() {
        let scope = Scope { request_id: Uuid::nil(), turn: 2, stage: "grade" };
        assert_eq!(within(scope, async { current() }).await, Some(scope));
        assert_eq!(current(), None);
        let _span = crate::scoped_span!("test.span", sleuth.extra = 1);
    }
}
