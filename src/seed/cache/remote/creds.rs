//! The machine's credentials for the shared prepare cache, never the rules': the environment
//! (`AWS_ACCESS_KEY_ID`, `AWS_SECRET_ACCESS_KEY`, `AWS_SESSION_TOKEN`), else the shared
//! credentials file (`AWS_SHARED_CREDENTIALS_FILE` or `~/.aws/credentials`, profile
//! `AWS_PROFILE` or `default`); none: requests go unsigned (a public bucket).
use std::path::PathBuf;

use super::sigv4::Creds;

pub fn from_machine() -> Option<Creds> {
    let var = |n: &str| std::env::var(n).ok().filter(|v| !v.is_empty());
    if let (Some(access_key), Some(secret_key)) =
        (var("AWS_ACCESS_KEY_ID"), var("AWS_SECRET_ACCESS_KEY"))
    {
        return Some(Creds {
            access_key,
            secret_key,
            session_token: var("AWS_SESSION_TOKEN"),
        });
    }
    let file = var("AWS_SHARED_CREDENTIALS_FILE")
        .map(PathBuf::from)
        .or_else(|| var("HOME").map(|h| PathBuf::from(h).join(".aws/credentials")))?;
    let profile = var("AWS_PROFILE").unwrap_or_else(|| "default".to_owned());
    let text = crate::sys::read_bounded_following(&file, 1 << 20).ok()??;
    from_file(&String::from_utf8_lossy(&text), &profile)
}

/// The profile's keys in an INI credentials file.
fn from_file(text: &str, profile: &str) -> Option<Creds> {
    let (mut inside, mut key, mut secret, mut token) = (false, None, None, None);
    for line in text.lines().map(str::trim) {
        if let Some(name) = line.strip_prefix('[').and_then(|l| l.strip_suffix(']')) {
            inside = name.trim() == profile;
            continue;
        }
        let Some((k, v)) = line.split_once('=').filter(|_| inside) else {
            continue;
        };
        let v = Some(v.trim().to_owned());
        match k.trim() {
            "aws_access_key_id" => key = v,
            "aws_secret_access_key" => secret = v,
            "aws_session_token" => token = v,
            _ => {}
        }
    }
    Some(Creds {
        access_key: key?,
        secret_key: secret?,
        session_token: token,
    })
}

#[cfg(test)]
mod tests {
    #[test]
    fn the_profile_named_is_read() {
        let text = "[default]\naws_access_key_id = A1\naws_secret_access_key=S1\n\n\
                    [ci]\naws_access_key_id=A2\naws_secret_access_key = S2\naws_session_token=T\n";
        let c = super::from_file(text, "ci").unwrap();
        assert_eq!((c.access_key.as_str(), c.secret_key.as_str()), ("A2", "S2"));
        assert_eq!(c.session_token.as_deref(), Some("T"));
        assert_eq!(super::from_file(text, "default").unwrap().access_key, "A1");
        assert!(super::from_file(text, "other").is_none());
    }
}
