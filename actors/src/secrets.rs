//! Credentials kept out of messages: a URL is shown with its password (or token) replaced by `***`.

/// `url` without its secret: `scheme://user:***@host…`, or `scheme://***@host…` for a token. Every server of a
/// comma-separated list is redacted.
pub fn redact_url(url: &str) -> String {
    url.split(',')
        .map(|server| {
            let Some((scheme, rest)) = server.split_once("://") else { return server.to_string() };
            match rest.rsplit_once('@') {
                Some((userinfo, host)) => match userinfo.split_once(':') {
                    Some((user, _)) => format!("{scheme}://{user}:***@{host}"),
                    None => format!("{scheme}://***@{host}"),
                },
                None => server.to_string(),
            }
        })
        .collect::<Vec<_>>()
        .join(",")
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn passwords_and_tokens_are_hidden() {
        assert_eq!(redact_url("postgres://u:secret@h:5432/db"), "postgres://u:***@h:5432/db");
        assert_eq!(redact_url("postgres://h/db"), "postgres://h/db");
        assert_eq!(redact_url("nats://planner:p%40ss@nats-0:4222"), "nats://planner:***@nats-0:4222");
        assert_eq!(redact_url("nats://s3cret@nats:4222"), "nats://***@nats:4222");
    }
}
