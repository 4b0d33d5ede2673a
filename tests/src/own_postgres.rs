//! A PostgreSQL server of the test's own: a cluster made with `initdb` in a temporary directory and run with
//! `pg_ctl` on a free port, for tests that stop the database under a running deployment and start it again.
//! Run as root, the cluster belongs to the `postgres` user (PostgreSQL refuses to run as root). Without the
//! server's binaries, the official image in a Docker container (`docker.rs`).

use std::{
    path::{Path, PathBuf},
    process::Command,
    time::Duration,
};

use crate::{
    docker::{self, Container, Spec},
    free_port,
};

pub struct OwnPostgres {
    /// The server's `postgres` database.
    pub url: String,
    /// The container the server runs in, when the harness fell back to Docker; then `bin` and `data` are unused.
    container: Option<Container>,
    bin: PathBuf,
    data: PathBuf,
    port: u16,
    as_postgres: bool,
    /// Extra `postgres` command-line options, e.g. `-c log_statement=all`.
    options: String,
    _dir: tempfile::TempDir,
}

/// Where `initdb` and `pg_ctl` are: `SLEUTH_TEST_PG_BIN`, else `pg_config --bindir`, else Debian's newest
/// `/usr/lib/postgresql/<version>/bin`; `None` when there are none.
fn bin_dir() -> Option<PathBuf> {
    let has_tools = |d: &Path| d.join("initdb").is_file() && d.join("pg_ctl").is_file();
    if let Ok(dir) = std::env::var("SLEUTH_TEST_PG_BIN") {
        return Some(PathBuf::from(dir));
    }
    if let Ok(out) = Command::new("pg_config").arg("--bindir").output()
        && out.status.success()
    {
        let dir = PathBuf::from(String::from_utf8_lossy(&out.stdout).trim());
        if has_tools(&dir) {
            return Some(dir);
        }
    }
    let mut versions: Vec<PathBuf> = std::fs::read_dir("/usr/lib/postgresql")
        .map(|entries| entries.filter_map(|e| e.ok()).map(|e| e.path().join("bin")).filter(|d| has_tools(d)).collect())
        .unwrap_or_default();
    versions.sort_by_key(|d| d.parent().and_then(|v| v.file_name()).and_then(|v| v.to_str()?.parse::<u32>().ok()));
    versions.pop()
}

fn is_root() -> bool {
    Command::new("id").arg("-u").output().is_ok_and(|o| String::from_utf8_lossy(&o.stdout).trim() == "0")
}

impl OwnPostgres {
    pub fn start() -> OwnPostgres {
        OwnPostgres::start_with("")
    }

    /// [`OwnPostgres::start`] with extra server options, e.g. `-c log_statement=all`.
    pub fn start_with(options: &str) -> OwnPostgres {
        let bin = match bin_dir().filter(|_| !docker::forced()) {
            Some(bin) => bin,
            None => return OwnPostgres::in_docker(options),
        };
        let dir = tempfile::tempdir().expect("temp dir");
        let as_postgres = is_root();
        if as_postgres {
            let status = Command::new("chown").arg("postgres").arg(dir.path()).status().expect("chown runs");
            assert!(status.success(), "cannot hand {} to the postgres user", dir.path().display());
        }
        let data = dir.path().join("data");
        let options = options.to_string();
        let port = free_port();
        let mut server =
            OwnPostgres { url: String::new(), container: None, bin, data, port, as_postgres, options, _dir: dir };
        let data = server.data.display().to_string();
        server.run("initdb", &["--no-sync", "-A", "trust", "-U", "postgres", "-D", &data]);
        server.start_again();
        server.url = format!("postgres://postgres@127.0.0.1:{}/postgres", server.port);
        server
    }

    /// The server in a container of the PostgreSQL image (trust authentication), `options` on its command line.
    fn in_docker(options: &str) -> OwnPostgres {
        if let Err(why) = docker::engine() {
            panic!(
                "this test runs a PostgreSQL server of its own and needs initdb and pg_ctl: install PostgreSQL's \
                 server (Debian: apt-get install postgresql), set SLEUTH_TEST_PG_BIN to the directory that holds \
                 them, or run a Docker engine for the harness's container ({why})"
            );
        }
        let port = free_port();
        let mut spec = Spec::of(docker::POSTGRES_IMAGE);
        spec.cmd =
            std::iter::once("postgres".to_string()).chain(options.split_whitespace().map(String::from)).collect();
        spec.env = vec![("POSTGRES_HOST_AUTH_METHOD".into(), "trust".into())];
        spec.ports = vec![(port, 5432)];
        let container = Container::start(&spec);
        docker::wait_until(&container, Duration::from_secs(60), "accepting connections", || answers(port));
        let dir = tempfile::tempdir().expect("temp dir");
        OwnPostgres {
            url: format!("postgres://postgres@127.0.0.1:{port}/postgres"),
            container: Some(container),
            bin: PathBuf::new(),
            data: dir.path().join("data"),
            port,
            as_postgres: false,
            options: options.to_string(),
            _dir: dir,
        }
    }

    /// Starts the server on its port and data directory, and waits until it accepts connections.
    pub fn start_again(&mut self) {
        if let Some(container) = &mut self.container {
            container.start_again();
            let port = self.port;
            docker::wait_until(container, Duration::from_secs(60), "accepting connections", || answers(port));
            return;
        }
        let data = self.data.display().to_string();
        let log = self.data.with_file_name("log").display().to_string();
        let socket_dir = self.data.parent().expect("the data directory's parent").display().to_string();
        let options = format!("-p {} -k {socket_dir} -c listen_addresses=127.0.0.1 {}", self.port, self.options);
        self.run("pg_ctl", &["-D", &data, "-o", &options, "-l", &log, "-w", "start"]);
    }

    /// What the server has logged so far.
    pub fn log(&self) -> String {
        if let Some(container) = &self.container {
            return container.logs();
        }
        std::fs::read_to_string(self.data.with_file_name("log")).unwrap_or_default()
    }

    /// Stops the server: `immediate` is a crash (every process killed, recovery at the next start), otherwise
    /// a fast shutdown (clients disconnected, a checkpoint written).
    pub fn stop(&mut self, immediate: bool) {
        if let Some(container) = &mut self.container {
            // SIGINT is PostgreSQL's fast shutdown (the image's stop signal); SIGKILL takes every process down.
            container.signal(if immediate { "SIGKILL" } else { "SIGINT" }, Duration::from_secs(30));
            return;
        }
        let data = self.data.display().to_string();
        self.run("pg_ctl", &["-D", &data, "-m", if immediate { "immediate" } else { "fast" }, "-w", "stop"]);
    }

    /// `tool` from the server's bin directory, as the `postgres` user when the test runs as root.
    fn command(&self, tool: &str) -> Command {
        let program = self.bin.join(tool);
        if self.as_postgres {
            let mut c = Command::new("runuser");
            c.args(["-u", "postgres", "--"]).arg(program);
            c
        } else {
            Command::new(program)
        }
    }

    fn run(&self, tool: &str, args: &[&str]) {
        let out = self.command(tool).args(args).output().unwrap_or_else(|e| panic!("cannot run {tool}: {e}"));
        assert!(
            out.status.success(),
            "{tool} {} failed: {}{}",
            args.join(" "),
            String::from_utf8_lossy(&out.stdout),
            String::from_utf8_lossy(&out.stderr)
        );
    }
}

/// True when a PostgreSQL server answers on `port`: it replies to an SSL request with one byte. A bare TCP
/// connect is not enough behind Docker's port proxy, which accepts before the server in the container listens;
/// and while the image initialises its cluster, its temporary server listens on no TCP port at all.
pub(crate) fn answers(port: u16) -> bool {
    use std::io::{Read, Write};
    let Ok(mut stream) = std::net::TcpStream::connect(("127.0.0.1", port)) else { return false };
    let _ = stream.set_read_timeout(Some(Duration::from_secs(2)));
    // Length 8, then the SSLRequest code 80877103.
    let request = [0, 0, 0, 8, 0x04, 0xd2, 0x16, 0x2f];
    let mut reply = [0u8; 1];
    stream.write_all(&request).is_ok() && stream.read_exact(&mut reply).is_ok() && matches!(&reply, b"N" | b"S")
}

impl Drop for OwnPostgres {
    fn drop(&mut self) {
        if self.container.is_some() {
            return;
        }
        let data = self.data.display().to_string();
        let _ = self.command("pg_ctl").args(["-D", &data, "-m", "immediate", "stop"]).output();
    }
}
