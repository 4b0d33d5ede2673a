//! The NATS connection every NATS user of the process opens the same way: credentials taken out of the URL
//! (async-nats ignores them there), the process name visible in `nats server report connections`, and the
//! server's last permission violation remembered so a refused call at start-up names the subject.

use std::time::Duration;

use crate::bus::BusError;

/// Is `subject` a requester's inbox: one of `prefixes` followed by at least one more token, with no wildcard,
/// no empty token and no whitespace? Only an inbox may receive a reply: a reply subject is chosen by whoever sent
/// the request, and the answer is published there under the answering stage's NATS user, which may write the
/// loop state and send work.
pub fn is_inbox(subject: &str, prefixes: &[String]) -> bool {
    const MAX_LEN: usize = 256;
    let well_formed = subject.len() <= MAX_LEN
        && !subject.chars().any(|c| c.is_whitespace() || c.is_control())
        && subject.split('.').all(|token| !token.is_empty() && token != "*" && token != ">");
    well_formed && prefixes.iter().any(|p| subject.strip_prefix(p.as_str()).is_some_and(|rest| !rest.is_empty()))
}

/// How often a connection pings its server when it has heard nothing from it. The client drops a connection
/// whose server left two pings unanswered and moves to another server of the list, so a server that hangs
/// (frozen, or cut off by the network, with its TCP connections still open) is left within three of these. The
/// NATS clients' default, two minutes, would hold every request of a hung node's clients past its deadline; a
/// ping every 2 s costs a few bytes.
pub const PING_INTERVAL: Duration = Duration::from_secs(2);

/// Connects to NATS with the process name visible in `nats server report connections`. `url` may list a
/// cluster's servers, comma-separated (`nats://a:4222,nats://b:4222`), as every NATS client takes them: the
/// client connects to one and fails over to the others. Credentials may be in the URL
/// (`nats://planner:secret@nats:4222`). Permission violations the server reports are kept for
/// [`explain`], because a request it refused otherwise only times out.
pub async fn connect(url: &str, name: &str) -> Result<async_nats::Client, BusError> {
    let (servers, credentials) = split_credentials(url);
    let options = match credentials {
        Some((user, Some(password))) => async_nats::ConnectOptions::with_user_and_password(user, password),
        Some((token, None)) => async_nats::ConnectOptions::with_token(token),
        None => async_nats::ConnectOptions::new(),
    };
    options
        .name(name)
        .ping_interval(PING_INTERVAL)
        .event_callback(|event| async move {
            if let async_nats::Event::ServerError(async_nats::ServerError::Other(message)) = event
                && message.to_lowercase().contains("permissions violation")
            {
                tracing::error!(refused = %message, "nats refused an operation");
                *REFUSED.lock().unwrap_or_else(|e| e.into_inner()) = Some((std::time::Instant::now(), message));
            }
        })
        .connect(servers)
        .await
        .map_err(|e| {
            BusError::Unavailable(format!("cannot connect to nats at {}: {e}", crate::secrets::redact_url(url)))
        })
}

/// The servers of a comma-separated list without credentials, and the credentials of the URL: `user:password@` or
/// `token@`. async-nats ignores credentials in a URL, so they are taken out and passed as options; and it reads a
/// string as one server, so the list is handed over as a list.
fn split_credentials(url: &str) -> (Vec<String>, Option<(String, Option<String>)>) {
    let mut credentials = None;
    let servers: Vec<String> = url
        .split(',')
        .filter(|server| !server.trim().is_empty())
        .map(|server| {
            let server = server.trim();
            match (server.find("://"), server.rfind('@')) {
                (Some(scheme), Some(at)) if at > scheme => {
                    let userinfo = &server[scheme + 3..at];
                    let decode = |s: &str| percent_decode(s);
                    credentials.get_or_insert_with(|| match userinfo.split_once(':') {
                        Some((user, password)) => (decode(user), Some(decode(password))),
                        None => (decode(userinfo), None),
                    });
                    format!("{}{}", &server[..scheme + 3], &server[at + 1..])
                }
                _ => server.to_string(),
            }
        })
        .collect();
    (servers, credentials)
}

/// `%XX` escapes of a URL's user part, so a password may hold any character.
fn percent_decode(text: &str) -> String {
    percent_encoding::percent_decode_str(text).decode_utf8_lossy().into_owned()
}

/// The last permission violation the server reported, and when.
static REFUSED: std::sync::Mutex<Option<(std::time::Instant, String)>> = std::sync::Mutex::new(None);

/// `message`, plus the permission violation the server reported in the last 30 s, if any: the subject a user
/// may not use.
pub fn explain(message: String) -> String {
    let refused = REFUSED.lock().unwrap_or_else(|e| e.into_inner()).clone();
    match refused {
        Some((at, refusal)) if at.elapsed() < Duration::from_secs(30) => {
            format!("{message} (the server refused: {refusal}; check this user's permissions)")
        }
        _ => message,
    }
}

/// Who sent a request, as nats-server vouches for it: the account in the `Nats-Request-Info` header it sets on
/// a request that crossed a service import (a tenant's). `None`: the request came from sleuth's own account.
pub fn requester(headers: Option<&async_nats::HeaderMap>) -> Result<Option<sleuth_messages::Principal>, String> {
    match headers.and_then(|h| h.get(sleuth_messages::REQUEST_INFO_HEADER)) {
        Some(info) => sleuth_messages::Principal::from_request_info(info.as_str()).map(Some),
        None => Ok(None),
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn credentials_leave_the_url_and_become_options() {
        let (servers, credentials) =
            split_credentials("nats://planner:p%40ss@nats-0:4222, nats://planner:p%40ss@nats-1:4222");
        assert_eq!(servers, ["nats://nats-0:4222", "nats://nats-1:4222"]);
        assert_eq!(credentials, Some(("planner".into(), Some("p@ss".into()))));
        assert_eq!(split_credentials("nats://s3cret@nats:4222").1, Some(("s3cret".into(), None)));
        assert_eq!(split_credentials("nats://127.0.0.1:4222"), (vec!["nats://127.0.0.1:4222".to_string()], None));
        assert_eq!(split_credentials("nats://a:1,nats://b:2,").0, ["nats://a:1", "nats://b:2"], "a trailing comma");
    }

    #[test]
    fn only_an_inbox_may_receive_a_reply() {
        let prefixes = vec!["_INBOX.".to_string()];
        assert!(is_inbox("_INBOX.abc123.7", &prefixes));
        for bad in [
            "sleuth.v1.loop.5f0e7a52-8d4b-4d5c-a3d7-9c9f3e1c2b10.state",
            "sleuth.v1.loop.5f0e7a52-8d4b-4d5c-a3d7-9c9f3e1c2b10.synthesizer",
            "$JS.API.STREAM.DELETE.SLEUTH_WORK",
            "_INBOX.",
            "_INBOX.>",
            "_INBOX.*.x",
            "_INBOX..x",
            "_INBOX.a b",
            "_INBOXX.a",
        ] {
            assert!(!is_inbox(bad, &prefixes), "{bad} must not receive replies");
        }
        assert!(is_inbox("_replies.svc.1", &["_replies.".to_string()]), "a configured prefix is an inbox");
        assert!(!is_inbox(&format!("_INBOX.{}", "x".repeat(300)), &prefixes), "too long");
    }
}
