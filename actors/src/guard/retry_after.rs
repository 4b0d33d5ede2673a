//! `Retry-After` from OpenAI-compatible endpoints. async-openai turns an error response into an `OpenAIError`
//! without its headers, so [`RetryAfterService`], the HTTP service under sleuth's LLM and embedding clients,
//! notes the header in a task-local slot that [`scope`] opens around one attempt and reads afterwards.

use std::{
    cell::Cell,
    future::Future,
    pin::Pin,
    task::{Context, Poll},
    time::Duration,
};

use async_openai::{error::OpenAIError, middleware::HttpRequestFactory};
use reqwest::header::HeaderMap;

tokio::task_local! {
    static RETRY_AFTER: Cell<Option<Duration>>;
}

/// Runs one attempt and returns what it returned, with the `Retry-After` its HTTP response carried, if any.
pub async fn scope<F: Future>(attempt: F) -> (F::Output, Option<Duration>) {
    RETRY_AFTER
        .scope(Cell::new(None), async {
            let out = attempt.await;
            (out, RETRY_AFTER.with(Cell::take))
        })
        .await
}

/// The server's wait: `retry-after-ms` (OpenAI's) or `Retry-After` in seconds. An HTTP date is ignored: the
/// backoff applies instead.
pub fn parse(headers: &HeaderMap) -> Option<Duration> {
    let value = |name: &str| headers.get(name).and_then(|v| v.to_str().ok()).map(str::trim);
    if let Some(ms) = value("retry-after-ms").and_then(|v| v.parse::<f64>().ok()).filter(|v| v.is_finite() && *v >= 0.0)
    {
        return Some(Duration::from_millis(ms as u64));
    }
    value("retry-after")
        .and_then(|v| v.parse::<f64>().ok())
        .filter(|v| v.is_finite() && *v >= 0.0)
        .map(Duration::from_secs_f64)
}

/// Notes the server's wait for the enclosing [`scope`]. Outside one (a call nobody retries) there is nowhere to
/// note it, and nothing to do.
pub(crate) fn note(wait: Duration) {
    let _ = RETRY_AFTER.try_with(|slot| slot.set(Some(wait)));
}

/// Sends requests with reqwest and notes `Retry-After` for the enclosing [`scope`]. It retries nothing itself:
/// the caller's retries decide, with their caps.
#[derive(Clone)]
pub struct RetryAfterService {
    client: reqwest::Client,
}

impl RetryAfterService {
    pub fn new(client: reqwest::Client) -> RetryAfterService {
        RetryAfterService { client }
    }
}

impl tower_service::Service<HttpRequestFactory> for RetryAfterService {
    type Response = reqwest::Response;
    type Error = OpenAIError;
    type Future = Pin<Box<dyn Future<Output = Result<reqwest::Response, OpenAIError>> + Send + 'static>>;

    fn poll_ready(&mut self, _cx: &mut Context<'_>) -> Poll<Result<(), OpenAIError>> {
        Poll::Ready(Ok(()))
    }

    fn call(&mut self, request: HttpRequestFactory) -> Self::Future {
        let client = self.client.clone();
        Box::pin(async move {
            let request = request.build().await?;
            let response = client.execute(request).await.map_err(OpenAIError::Reqwest)?;
            if let Some(wait) = parse(response.headers()) {
                note(wait);
            }
            Ok(response)
        })
    }
}

#[cfg(test)]
mod tests {
    use reqwest::header::{HeaderMap, HeaderValue};

    use super::*;

    #[test]
    fn seconds_and_milliseconds_are_read_and_dates_ignored() {
        let mut h = HeaderMap::new();
        assert_eq!(parse(&h), None);
        h.insert("retry-after", HeaderValue::from_static("2"));
        assert_eq!(parse(&h), Some(Duration::from_secs(2)));
        h.insert("retry-after-ms", HeaderValue::from_static("150"));
        assert_eq!(parse(&h), Some(Duration::from_millis(150)), "the finer one wins");
        let mut d = HeaderMap::new();
        d.insert("retry-after", HeaderValue::from_static("Wed, 21 Oct 2015 07:28:00 GMT"));
        assert_eq!(parse(&d), None);
        d.insert("retry-after", HeaderValue::from_static("-1"));
        assert_eq!(parse(&d), None);
    }

    #[tokio::test]
    async fn a_scope_sees_what_its_attempt_noted_and_nothing_leaks_between_scopes() {
        let (_, seen) = scope(async { RETRY_AFTER.with(|s| s.set(Some(Duration::from_secs(3)))) }).await;
        assert_eq!(seen, Some(Duration::from_secs(3)));
        let (_, seen) = scope(async {}).await;
        assert_eq!(seen, None);
    }
}
