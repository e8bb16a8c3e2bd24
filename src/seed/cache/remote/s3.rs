//! A small synchronous S3 client for the shared prepare cache: GET (streamed, bounded), HEAD,
//! and a create-only PUT (`If-None-Match: *`), signed with the machine's credentials (or
//! unsigned where it has none: a public bucket), each request bounded by a connect timeout
//! and by the action's deadline. A PUT streams its body (a file is never read whole). Errors
//! say what failed and never hold a credential.
use std::io::Read;
use std::time::{Duration, Instant, SystemTime, UNIX_EPOCH};

use anyhow::{bail, Context as _, Result};

use super::sigv4::{self, Creds};
use crate::config::CacheRemote;

/// The longest a connection may take to open.
const CONNECT: Duration = Duration::from_secs(5);
/// The longest a store may stay silent in the middle of a request (its headers or a body).
const STALL: Duration = Duration::from_secs(10);
/// The longest one request may take, within the deadline.
const PER_REQUEST: Duration = Duration::from_secs(300);

/// The payload hash of a request without a body.
const EMPTY_SHA256: &str = "e3b0c44298fc1c149afbf4c8996fb92427ae41e4649b934ca495991b7852b855";

#[derive(Clone)]
pub struct Store {
    agent: ureq::Agent,
    /// `scheme://host[:port]`
    origin: String,
    host: String,
    /// Encoded path of the bucket's top, ending in `/` (path-style: `/bucket/`).
    base_path: String,
    /// Object names start with it (`prefix/` or empty).
    prefix: String,
    region: String,
    creds: Option<Creds>,
    deadline: Instant,
}

/// What a create-only PUT found.
#[derive(Debug, PartialEq, Eq)]
pub enum Put {
    Created,
    /// An object of that name was there already (left as it was).
    Exists,
}

impl Store {
    pub fn new(remote: &CacheRemote, deadline: Instant) -> Store {
        let (origin, base_path) = match &remote.endpoint {
            Some(e) => (e.clone(), format!("/{}/", remote.bucket)),
            None => (
                format!(
                    "https://{}.s3.{}.amazonaws.com",
                    remote.bucket, remote.region
                ),
                "/".to_owned(),
            ),
        };
        let host = origin
            .split_once("://")
            .map_or(origin.as_str(), |(_, h)| h)
            .to_owned();
        let agent: ureq::Agent = ureq::Agent::config_builder()
            .http_status_as_error(false)
            .max_redirects(0)
            // Each transfer thread keeps its connection from one request to the next.
            .max_idle_connections_per_host(super::CONNECTIONS)
            .timeout_connect(Some(CONNECT))
            .timeout_per_read(Some(STALL))
            .timeout_per_write(Some(STALL))
            .user_agent(concat!("git-kardwt/", env!("CARGO_PKG_VERSION")))
            .tls_config(tls())
            .build()
            .into();
        let prefix = if remote.prefix.is_empty() {
            String::new()
        } else {
            format!("{}/", remote.prefix)
        };
        Store {
            agent,
            origin,
            host,
            base_path,
            prefix,
            region: remote.region.clone(),
            creds: super::creds::from_machine(),
            deadline,
        }
    }

    pub fn deadline(&self) -> Instant {
        self.deadline
    }

    /// `s3://bucket/prefix` style name of the store, for messages.
    pub fn describe(&self) -> String {
        format!("{}{}{}", self.origin, self.base_path, self.prefix)
    }

    fn left(&self) -> Result<Duration> {
        let left = self.deadline.saturating_duration_since(Instant::now());
        if left.is_zero() {
            bail!("the action's deadline passed");
        }
        Ok(left.min(PER_REQUEST))
    }

    /// The URL and signed headers of a request for the object `name`.
    fn prepare(
        &self,
        method: &str,
        name: &str,
        payload: &str,
        extra: &[(&str, &str)],
    ) -> (String, Vec<(String, String)>) {
        let path = sigv4::encode_path(&format!("{}{}{name}", self.base_path, self.prefix));
        let url = format!("{}{path}", self.origin);
        let mut headers: Vec<(String, String)> = extra
            .iter()
            .map(|(k, v)| ((*k).to_owned(), (*v).to_owned()))
            .collect();
        let Some(creds) = &self.creds else {
            return (url, headers);
        };
        let secs = SystemTime::now()
            .duration_since(UNIX_EPOCH)
            .map_or(0, |d| d.as_secs());
        let date = sigv4::amz_date(secs);
        let mut signed: Vec<(&str, &str)> =
            vec![("x-amz-content-sha256", payload), ("x-amz-date", &date)];
        if let Some(t) = &creds.session_token {
            signed.push(("x-amz-security-token", t));
        }
        let auth = sigv4::authorization(
            &sigv4::Request {
                method,
                host: &self.host,
                path: &path,
                headers: &signed,
                payload_sha256: payload,
                region: &self.region,
                amz_date: &date,
            },
            creds,
        );
        headers.extend(
            signed
                .iter()
                .map(|(k, v)| ((*k).to_owned(), (*v).to_owned())),
        );
        headers.push(("Authorization".to_owned(), auth));
        (url, headers)
    }

    /// `method` on the object `name` with `body` (whose SHA-256 is `payload`).
    fn call(
        &self,
        method: &str,
        name: &str,
        body: impl ureq::AsSendBody,
        payload: &str,
        extra: &[(&str, &str)],
    ) -> Result<ureq::http::Response<ureq::Body>> {
        let (url, headers) = self.prepare(method, name, payload, extra);
        let left = self.left()?;
        let mut req = ureq::http::Request::builder().method(method).uri(&url);
        for (k, v) in &headers {
            req = req.header(k.as_str(), v.as_str());
        }
        let config = self
            .agent
            .configure_request(req.body(body).context("cannot build the request")?);
        let req = config.timeout_global(Some(left)).build();
        self.agent
            .run(req)
            .map_err(|e| anyhow::anyhow!("{method} {name}: {}", describe(&e)))
    }

    /// The object `name`'s bytes, at most `limit` of them; `None` when there is none.
    pub fn get(&self, name: &str, limit: u64) -> Result<Option<Vec<u8>>> {
        let mut resp = self.call("GET", name, &[][..], EMPTY_SHA256, &[])?;
        match resp.status().as_u16() {
            200 => {}
            404 => return Ok(None),
            s => bail!("GET {name}: the store answered {s}"),
        }
        let bytes = resp
            .body_mut()
            .with_config()
            .limit(limit)
            .read_to_vec()
            .map_err(|e| anyhow::anyhow!("GET {name}: {}", describe(&e)))?;
        Ok(Some(bytes))
    }

    /// Stream the object `name` into `sink`, refusing more than `limit` bytes; `None` when there
    /// is none, else the bytes read.
    pub fn get_into(
        &self,
        name: &str,
        limit: u64,
        sink: &mut dyn FnMut(&[u8]) -> Result<()>,
    ) -> Result<Option<u64>> {
        let resp = self.call("GET", name, &[][..], EMPTY_SHA256, &[])?;
        match resp.status().as_u16() {
            200 => {}
            404 => return Ok(None),
            s => bail!("GET {name}: the store answered {s}"),
        }
        let mut reader = resp.into_body().into_reader();
        let mut buf = vec![0u8; 1 << 18];
        let mut total = 0u64;
        loop {
            let n = reader
                .read(&mut buf)
                .map_err(|e| anyhow::anyhow!("GET {name}: {e}"))?;
            if n == 0 {
                return Ok(Some(total));
            }
            total += n as u64;
            if total > limit {
                bail!("GET {name}: more bytes than listed");
            }
            sink(&buf[..n])?;
        }
    }

    /// Is there an object `name`?
    pub fn exists(&self, name: &str) -> Result<bool> {
        let resp = self.call("HEAD", name, &[][..], EMPTY_SHA256, &[])?;
        match resp.status().as_u16() {
            200 => Ok(true),
            404 => Ok(false),
            s => bail!("HEAD {name}: the store answered {s}"),
        }
    }

    /// Write `body` (whose SHA-256 is `sha256`, signed into the request so that a store checking
    /// it refuses other bytes) as `name` unless an object is there already.
    pub fn put_new(&self, name: &str, body: impl ureq::AsSendBody, sha256: &str) -> Result<Put> {
        let resp = self.call("PUT", name, body, sha256, &[("If-None-Match", "*")])?;
        match resp.status().as_u16() {
            200 | 201 | 204 => Ok(Put::Created),
            // 409: a concurrent conditional write of the same name won.
            412 | 409 => Ok(Put::Exists),
            s => bail!("PUT {name}: the store answered {s}"),
        }
    }
}

/// ureq's error in a few words (never a header: no credential).
/// The TLS stack: the system's own on macOS (native-tls), rustls elsewhere.
fn tls() -> ureq::tls::TlsConfig {
    let provider = if cfg!(target_os = "macos") {
        ureq::tls::TlsProvider::NativeTls
    } else {
        ureq::tls::TlsProvider::Rustls
    };
    ureq::tls::TlsConfig::builder().provider(provider).build()
}

fn describe(e: &ureq::Error) -> String {
    match e {
        ureq::Error::Timeout(_) => "the store did not answer in time".to_owned(),
        ureq::Error::ConnectionFailed => "cannot connect".to_owned(),
        ureq::Error::Io(io) => io.to_string(),
        other => other.to_string(),
    }
}
