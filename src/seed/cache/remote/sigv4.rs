//! AWS Signature Version 4 for S3 requests, pure: the `Authorization` header of one request
//! from its method, host, path, signed headers and payload hash, checked against AWS's own
//! published examples. The secret never leaves this module but as an HMAC key.
use hmac::{Hmac, Mac};
use sha2::{Digest, Sha256};

/// Credentials read from the machine. Debug never shows the secret or the token.
#[derive(Clone)]
pub struct Creds {
    pub access_key: String,
    pub secret_key: String,
    pub session_token: Option<String>,
}

impl std::fmt::Debug for Creds {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.write_str("Creds(not shown)")
    }
}

pub fn hex(bytes: &[u8]) -> String {
    bytes.iter().map(|b| format!("{b:02x}")).collect()
}

pub fn sha256_hex(bytes: &[u8]) -> String {
    hex(&Sha256::digest(bytes))
}

fn hmac(key: &[u8], data: &[u8]) -> Vec<u8> {
    let mut mac = Hmac::<Sha256>::new_from_slice(key).expect("HMAC takes a key of any length");
    mac.update(data);
    mac.finalize().into_bytes().to_vec()
}

/// The signing key of `date` (`YYYYMMDD`), `region` and `service`.
pub fn signing_key(secret: &str, date: &str, region: &str, service: &str) -> Vec<u8> {
    let k = hmac(format!("AWS4{secret}").as_bytes(), date.as_bytes());
    let k = hmac(&k, region.as_bytes());
    let k = hmac(&k, service.as_bytes());
    hmac(&k, b"aws4_request")
}

/// `path` URI-encoded as S3 wants it: every byte but the unreserved ones and `/`.
pub fn encode_path(path: &str) -> String {
    let mut out = String::with_capacity(path.len());
    for b in path.bytes() {
        if b.is_ascii_alphanumeric() || b"-_.~/".contains(&b) {
            out.push(char::from(b));
        } else {
            out.push_str(&format!("%{b:02X}"));
        }
    }
    out
}

/// One request to sign. `headers` are signed as given (names lowercase, values trimmed) with
/// `host`; the caller sends the same ones.
pub struct Request<'a> {
    pub method: &'a str,
    pub host: &'a str,
    /// Already encoded ([`encode_path`]).
    pub path: &'a str,
    pub headers: &'a [(&'a str, &'a str)],
    pub payload_sha256: &'a str,
    pub region: &'a str,
    /// `YYYYMMDDTHHMMSSZ`, as sent in `x-amz-date`.
    pub amz_date: &'a str,
}

/// The `Authorization` header's value for `req` (no query string: kardwt sends none).
pub fn authorization(req: &Request<'_>, creds: &Creds) -> String {
    let mut headers: Vec<(String, String)> = req
        .headers
        .iter()
        .map(|(k, v)| (k.to_ascii_lowercase(), v.trim().to_owned()))
        .chain([("host".to_owned(), req.host.to_owned())])
        .collect();
    headers.sort();
    let canonical_headers: String = headers.iter().map(|(k, v)| format!("{k}:{v}\n")).collect();
    let signed: Vec<&str> = headers.iter().map(|(k, _)| k.as_str()).collect();
    let signed = signed.join(";");
    let canonical = format!(
        "{}\n{}\n\n{canonical_headers}\n{signed}\n{}",
        req.method, req.path, req.payload_sha256
    );
    let date = &req.amz_date[..8];
    let scope = format!("{date}/{}/s3/aws4_request", req.region);
    let to_sign = format!(
        "AWS4-HMAC-SHA256\n{}\n{scope}\n{}",
        req.amz_date,
        sha256_hex(canonical.as_bytes())
    );
    let key = signing_key(&creds.secret_key, date, req.region, "s3");
    let signature = hex(&hmac(&key, to_sign.as_bytes()));
    format!(
        "AWS4-HMAC-SHA256 Credential={}/{scope}, SignedHeaders={signed}, Signature={signature}",
        creds.access_key
    )
}

/// `YYYYMMDDTHHMMSSZ` of `secs` since the epoch.
pub fn amz_date(secs: u64) -> String {
    crate::sys::rfc3339(secs).replace(['-', ':'], "")
}

#[cfg(test)]
mod tests {
    use super::*;

    /// AWS's example credentials, from its Signature Version 4 documentation.
    fn example() -> Creds {
        Creds {
            access_key: "AKIAIOSFODNN7EXAMPLE".into(),
            secret_key: "wJalrXUtnFEMI/K7MDENG/bPxRfiCYEXAMPLEKEY".into(),
            session_token: None,
        }
    }

    #[test]
    fn the_signing_key_is_the_documented_one() {
        // "Examples of how to derive a signing key for Signature Version 4" (AWS General
        // Reference).
        let key = signing_key(
            "wJalrXUtnFEMI/K7MDENG+bPxRfiCYEXAMPLEKEY",
            "20120215",
            "us-east-1",
            "iam",
        );
        assert_eq!(
            hex(&key),
            "f4780e2d9f65fa895f9c67b32ce1baf0b0d8a43505a000a1a9e090d414db404d"
        );
    }

    #[test]
    fn s3s_documented_get_object_example_signs_the_same() {
        // Amazon S3 API Reference, "Signature Calculations for the Authorization Header:
        // Transferring Payload in a Single Chunk", example GET Object.
        let empty = sha256_hex(b"");
        let req = Request {
            method: "GET",
            host: "examplebucket.s3.amazonaws.com",
            path: "/test.txt",
            headers: &[
                ("Range", "bytes=0-9"),
                ("x-amz-content-sha256", &empty),
                ("x-amz-date", "20130524T000000Z"),
            ],
            payload_sha256: &empty,
            region: "us-east-1",
            amz_date: "20130524T000000Z",
        };
        assert_eq!(
            authorization(&req, &example()),
            "AWS4-HMAC-SHA256 Credential=AKIAIOSFODNN7EXAMPLE/20130524/us-east-1/s3/aws4_request, \
             SignedHeaders=host;range;x-amz-content-sha256;x-amz-date, \
             Signature=f0e8bdb87c964420e857bd35b5d6ed310bd44f0170aba48dd91039c6036bdb41"
        );
    }

    #[test]
    fn s3s_documented_put_object_example_signs_the_same() {
        // The same page, example PUT Object: a path that needs encoding, a payload.
        let body = sha256_hex(b"Welcome to Amazon S3.");
        assert_eq!(
            body,
            "44ce7dd67c959e0d3524ffac1771dfbba87d2b6b4b4e99e42034a8b803f8b072"
        );
        let path = encode_path("/test$file.text");
        assert_eq!(path, "/test%24file.text");
        let req = Request {
            method: "PUT",
            host: "examplebucket.s3.amazonaws.com",
            path: &path,
            headers: &[
                ("Date", "Fri, 24 May 2013 00:00:00 GMT"),
                ("x-amz-date", "20130524T000000Z"),
                ("x-amz-storage-class", "REDUCED_REDUNDANCY"),
                ("x-amz-content-sha256", &body),
            ],
            payload_sha256: &body,
            region: "us-east-1",
            amz_date: "20130524T000000Z",
        };
        let auth = authorization(&req, &example());
        assert!(
            auth.ends_with(
                "SignedHeaders=date;host;x-amz-content-sha256;x-amz-date;x-amz-storage-class, \
                 Signature=98ad721746da40c64f1a55b78f14c238d841ea1380cd77a1b5971af0ece108bd"
            ),
            "{auth}"
        );
    }

    #[test]
    fn dates_and_debug() {
        assert_eq!(amz_date(1_369_353_600), "20130524T000000Z");
        let shown = format!("{:?}", example());
        assert!(
            !shown.contains("EXAMPLEKEY") && !shown.contains("AKIA"),
            "{shown}"
        );
    }
}
