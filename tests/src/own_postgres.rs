//! A PostgreSQL server of the test's own: a cluster made with `initdb` in a temporary directory and run with
//! `pg_ctl` on a free port, for tests that stop the database under a running deployment and start it again.
//! Run as root, the cluster belongs to the `postgres` user (PostgreSQL refuses to run as root).

use std::{
    path::{Path, PathBuf},
    process::Command,
};

use crate::free_port;

pub struct OwnPostgres {
    /// The server's `postgres` database.
    pub url: String,
    bin: PathBuf,
    data: PathBuf,
    port: u16,
    as_postgres: bool,
    /// Extra `postgres` command-line options, e.g. `-c log_statement=all`.
    options: String,
    _dir: tempfile::TempDir,
}

/// Where `initdb` and `pg_ctl` are: `SLEUTH_TEST_PG_BIN`, else `pg_config --bindir`, else Debian's newest
/// `/usr/lib/postgresql/<version>/bin`.
fn bin_dir() -> PathBuf {
    let has_tools = |d: &Path| d.join("initdb").is_file() && d.join("pg_ctl").is_file();
    if let Ok(dir) = std::env::var("SLEUTH_TEST_PG_BIN") {
        return PathBuf::from(dir);
    }
    if let Ok(out) = Command::new("pg_config").arg("--bindir").output()
        && out.status.success()
    {
        let dir = PathBuf::from(String::from_utf8_lossy(&out.stdout).trim());
        if has_tools(&dir) {
            return dir;
        }
    }
    let mut versions: Vec<PathBuf> = std::fs::read_dir("/usr/lib/postgresql")
        .map(|entries| entries.filter_map(|e| e.ok()).map(|e| e.path().join("bin")).filter(|d| has_tools(d)).collect())
        .unwrap_or_default();
    versions.sort_by_key(|d| d.parent().and_then(|v| v.file_name()).and_then(|v| v.to_str()?.parse::<u32>().ok()));
    versions.pop().unwrap_or_else(|| {
        panic!(
            "this test runs a PostgreSQL server of its own and needs initdb and pg_ctl: install PostgreSQL's server \
             (Debian: apt-get install postgresql) or set SLEUTH_TEST_PG_BIN to the directory that holds them"
        )
    })
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
        let bin = bin_dir();
        let dir = tempfile::tempdir().expect("temp dir");
        let as_postgres = is_root();
        if as_postgres {
            let status = Command::new("chown").arg("postgres").arg(dir.path()).status().expect("chown runs");
            assert!(status.success(), "cannot hand {} to the postgres user", dir.path().display());
        }
        let data = dir.path().join("data");
        let options = options.to_string();
        let mut server =
            OwnPostgres { url: String::new(), bin, data, port: free_port(), as_postgres, options, _dir: dir };
        let data = server.data.display().to_string();
        server.run("initdb", &["--no-sync", "-A", "trust", "-U", "postgres", "-D", &data]);
        server.start_again();
        server.url = format!("postgres://postgres@127.0.0.1:{}/postgres", server.port);
        server
    }

    /// Starts the server on its port and data directory, and waits until it accepts connections.
    pub fn start_again(&mut self) {
        let data = self.data.display().to_string();
        let log = self.data.with_file_name("log").display().to_string();
        let socket_dir = self.data.parent().expect("the data directory's parent").display().to_string();
        let options = format!("-p {} -k {socket_dir} -c listen_addresses=127.0.0.1 {}", self.port, self.options);
        self.run("pg_ctl", &["-D", &data, "-o", &options, "-l", &log, "-w", "start"]);
    }

    /// What the server has logged so far.
    pub fn log(&self) -> String {
        std::fs::read_to_string(self.data.with_file_name("log")).unwrap_or_default()
    }

    /// Stops the server: `immediate` is a crash (every process killed, recovery at the next start), otherwise
    /// a fast shutdown (clients disconnected, a checkpoint written).
    pub fn stop(&mut self, immediate: bool) {
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

impl Drop for OwnPostgres {
    fn drop(&mut self) {
        let data = self.data.display().to_string();
        let _ = self.command("pg_ctl").args(["-D", &data, "-m", "immediate", "stop"]).output();
    }
}
