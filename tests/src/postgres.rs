//! A PostgreSQL database for one test: a fresh database created on the server in `SLEUTH_TEST_DATABASE_URL`
//! (else a local server on 127.0.0.1:5432; `.ci/run` starts one when none is running; else a container of the
//! official image that the process's tests share), dropped when the test ends.

use std::{
    sync::{Arc, Mutex, Weak},
    time::Duration,
};

use sqlx::{Executor, postgres::PgPoolOptions};

use crate::docker::{self, Container, Spec};

/// The server tried when `SLEUTH_TEST_DATABASE_URL` is unset: a local one with trust authentication.
const LOCAL: &str = "postgres://postgres@127.0.0.1:5432/postgres";

pub struct TestDatabase {
    /// URL of this test's own database.
    pub url: String,
    admin_url: String,
    name: String,
    /// The container the server runs in, when the harness fell back to Docker: shared by the process's tests
    /// and removed with the last database that uses it.
    _server: Option<Arc<SharedServer>>,
}

struct SharedServer {
    url: String,
    _container: Container,
}

/// The PostgreSQL container the process's tests share, started when the first needs it.
fn shared_server() -> Arc<SharedServer> {
    static SHARED: Mutex<Weak<SharedServer>> = Mutex::new(Weak::new());
    let mut shared = SHARED.lock().unwrap_or_else(|poisoned| poisoned.into_inner());
    if let Some(server) = shared.upgrade() {
        return server;
    }
    let port = crate::free_port();
    let mut spec = Spec::of(docker::POSTGRES_IMAGE);
    spec.env = vec![("POSTGRES_HOST_AUTH_METHOD".into(), "trust".into())];
    spec.ports = vec![(port, 5432)];
    let container = Container::start(&spec);
    let ready = || crate::own_postgres::answers(port);
    docker::wait_until(&container, Duration::from_secs(60), "accepting connections", ready);
    let server =
        Arc::new(SharedServer { url: format!("postgres://postgres@127.0.0.1:{port}/postgres"), _container: container });
    *shared = Arc::downgrade(&server);
    server
}

/// `url` with its database name replaced.
fn with_database(url: &str, name: &str) -> String {
    let (base, query) = url.split_once('?').map_or((url, None), |(b, q)| (b, Some(q)));
    let scheme_end = base.find("://").map_or(0, |i| i + 3);
    let base = match base[scheme_end..].find('/') {
        Some(slash) => &base[..scheme_end + slash],
        None => base,
    };
    match query {
        Some(q) => format!("{base}/{name}?{q}"),
        None => format!("{base}/{name}"),
    }
}

/// Creates a fresh database. Panics with what to do when no server is configured or reachable.
pub async fn test_database() -> TestDatabase {
    let configured = std::env::var("SLEUTH_TEST_DATABASE_URL").ok().filter(|u| !u.is_empty() && !docker::forced());
    let connect = |url: String| async move {
        PgPoolOptions::new().max_connections(1).acquire_timeout(Duration::from_secs(10)).connect(&url).await
    };
    let (admin_url, admin, server) = match configured {
        Some(url) => match connect(url.clone()).await {
            Ok(admin) => (url, admin, None),
            Err(e) => panic!("cannot connect to PostgreSQL at SLEUTH_TEST_DATABASE_URL ({url}): {e}"),
        },
        None => {
            let local = if docker::forced() { None } else { connect(LOCAL.to_string()).await.ok() };
            match local {
                Some(admin) => (LOCAL.to_string(), admin, None),
                None => {
                    if let Err(why) = docker::engine() {
                        panic!(
                            "this test needs PostgreSQL: none at {LOCAL}, and no Docker engine for the harness's \
                             container ({why}). Start one, or set SLEUTH_TEST_DATABASE_URL to a server where the \
                             tests may create databases; `bash .ci/run` starts one if needed"
                        );
                    }
                    let server = shared_server();
                    let admin = connect(server.url.clone()).await.unwrap_or_else(|e| {
                        panic!("cannot connect to the PostgreSQL container at {}: {e}", server.url)
                    });
                    (server.url.clone(), admin, Some(server))
                }
            }
        }
    };
    let name = crate::unique("sleuth_test").to_lowercase();
    admin.execute(format!("CREATE DATABASE {name}").as_str()).await.expect("cannot create a test database");
    admin.close().await;
    TestDatabase { url: with_database(&admin_url, &name), admin_url, name, _server: server }
}

impl Drop for TestDatabase {
    fn drop(&mut self) {
        let (admin_url, name) = (self.admin_url.clone(), self.name.clone());
        // Drop runs outside any runtime guarantee: do it on a thread with its own.
        let _ = std::thread::spawn(move || {
            let rt = tokio::runtime::Builder::new_current_thread().enable_all().build().ok()?;
            rt.block_on(async {
                let admin = PgPoolOptions::new().max_connections(1).connect(&admin_url).await.ok()?;
                admin.execute(format!("DROP DATABASE IF EXISTS {name} WITH (FORCE)").as_str()).await.ok()?;
                Some(())
            })
        })
        .join();
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn replaces_the_database_name() {
        assert_eq!(with_database("postgres://u@h:5432/postgres", "t1"), "postgres://u@h:5432/t1");
        assert_eq!(with_database("postgres://u@h/db?sslmode=disable", "t1"), "postgres://u@h/t1?sslmode=disable");
        assert_eq!(with_database("postgres://h", "t1"), "postgres://h/t1");
    }
}
