//! A PostgreSQL cluster of a test's own, which it may stop and start: the failure tests stop
//! the server under a running proxy, which must not disturb the other tests' server.

use std::net::TcpListener;
use std::path::PathBuf;
use std::process::Command;

use tempfile::TempDir;

/// A scratch cluster on loopback, stopped and removed on drop.
pub struct Cluster {
    bin: PathBuf,
    owner: Option<String>,
    dir: TempDir,
    port: u16,
}

impl Cluster {
    /// Initialises and starts a cluster, or `None` (with a printed line) when
    /// `MC_TEST_PG_BIN` is absent.
    pub fn start() -> Option<Self> {
        let Ok(bin) = std::env::var("MC_TEST_PG_BIN") else {
            assert!(
                std::env::var_os("MC_TEST_PG_URL").is_none(),
                "MC_TEST_PG_URL is set but MC_TEST_PG_BIN is not: .ci/postgres-scratch sets both"
            );
            eprintln!(
                "skipped: MC_TEST_PG_BIN is not set (eval \"$(.ci/postgres-scratch start)\" sets it)"
            );
            return None;
        };
        let owner = std::env::var("MC_TEST_PG_OWNER").ok().filter(|_| is_root());
        let dir = tempfile::Builder::new()
            .prefix("mc-pg-test")
            .tempdir()
            .unwrap();
        if let Some(owner) = &owner {
            run(Command::new("chown").arg(owner).arg(dir.path()));
        }
        let port = TcpListener::bind("127.0.0.1:0")
            .unwrap()
            .local_addr()
            .unwrap()
            .port();
        let cluster = Self {
            bin: PathBuf::from(bin),
            owner,
            dir,
            port,
        };
        let data = cluster.data();
        run(cluster
            .command("initdb")
            .args(["-U", "mc", "--auth=trust", "-E", "UTF8", "--no-sync", "-D"])
            .arg(&data));
        cluster.up();
        Some(cluster)
    }

    /// The URL of its `postgres` database.
    pub fn url(&self) -> String {
        format!(
            "postgres://mc:not-a-secret@127.0.0.1:{}/postgres",
            self.port
        )
    }

    /// Starts the server (again), on the same port.
    pub fn up(&self) {
        let options = format!(
            "-c listen_addresses=127.0.0.1 -p {} -k {} -c fsync=off",
            self.port,
            self.dir.path().display()
        );
        run(self
            .command("pg_ctl")
            .arg("-D")
            .arg(self.data())
            .arg("-l")
            .arg(self.dir.path().join("server.log"))
            .args(["-w", "-o", &options, "start"]));
    }

    /// Stops the server at once (connections are cut).
    pub fn down(&self) {
        run(self.command("pg_ctl").arg("-D").arg(self.data()).args([
            "-m",
            "immediate",
            "-w",
            "stop",
        ]));
    }

    fn data(&self) -> PathBuf {
        self.dir.path().join("data")
    }

    fn command(&self, program: &str) -> Command {
        let program = self.bin.join(program);
        match &self.owner {
            Some(owner) => {
                let mut command = Command::new("setpriv");
                command
                    .arg(format!("--reuid={owner}"))
                    .arg(format!("--regid={}", group_of(owner)))
                    .arg("--init-groups")
                    .arg("--")
                    .arg(program);
                command
            }
            None => Command::new(program),
        }
    }
}

impl Drop for Cluster {
    fn drop(&mut self) {
        let _stopped = self
            .command("pg_ctl")
            .arg("-D")
            .arg(self.data())
            .args(["-m", "immediate", "-w", "stop"])
            .output();
    }
}

fn run(command: &mut Command) {
    let output = command.output().unwrap();
    assert!(
        output.status.success(),
        "{command:?} failed: {}{}",
        String::from_utf8_lossy(&output.stdout),
        String::from_utf8_lossy(&output.stderr)
    );
}

fn group_of(user: &str) -> String {
    let output = Command::new("id").args(["-g", user]).output().unwrap();
    String::from_utf8_lossy(&output.stdout).trim().to_owned()
}

fn is_root() -> bool {
    use std::os::unix::fs::MetadataExt;
    std::fs::metadata("/proc/self").is_ok_and(|meta| meta.uid() == 0)
}
