//! The foundry's webhook (`agents.notify.url`): a JSON POST for each parked question and each
//! finished run, signed so that whoever receives it (a phone notification service, a chat
//! bot) can tell it came from this ouro: `X-Ouro-Signature: sha256=<hex>`, the HMAC-SHA256 of
//! the body with the secret in `agents/webhook-secret` in ouro's home (made, 0600, on first
//! use). It carries no way to answer: that still takes the serve token or a terminal.

use std::io::Write;
use std::os::unix::fs::OpenOptionsExt;
use std::path::{Path, PathBuf};
use std::time::Duration;

use ring::hmac;

/// How long one POST may take; a slow receiver never holds a run up (each is its own task).
const SEND_TIMEOUT: Duration = Duration::from_secs(10);

pub(super) const SIGNATURE_HEADER: &str = "X-Ouro-Signature";

#[derive(Clone)]
pub(super) struct Webhook {
    url: String,
    secret_file: PathBuf,
    http: reqwest::Client,
}

impl Webhook {
    /// The webhook of `home`'s settings, if one is set.
    pub(super) fn new(home: &Path, url: Option<String>) -> Option<Webhook> {
        let url = url.filter(|u| !u.trim().is_empty())?;
        crate::api::client::install_crypto();
        let http = reqwest::Client::builder()
            .timeout(SEND_TIMEOUT)
            .build()
            .ok()?;
        Some(Webhook {
            url,
            secret_file: home.join("agents").join("webhook-secret"),
            http,
        })
    }

    /// Posts `body` in the background; a failure is logged, never the run's.
    pub(super) fn send(&self, body: serde_json::Value) {
        let hook = self.clone();
        tokio::spawn(async move {
            if let Err(e) = hook.post(body).await {
                tracing::warn!(url = %hook.url, error = %e, "could not post to agents.notify.url");
            }
        });
    }

    async fn post(&self, body: serde_json::Value) -> Result<(), String> {
        let secret = secret(&self.secret_file)
            .map_err(|e| format!("could not read or make {}: {e}", self.secret_file.display()))?;
        let bytes = body.to_string().into_bytes();
        self.http
            .post(&self.url)
            .header("content-type", "application/json")
            .header(SIGNATURE_HEADER, signature(&secret, &bytes))
            .body(bytes)
            .send()
            .await
            .and_then(|r| r.error_for_status())
            .map(drop)
            .map_err(|e| e.to_string())
    }
}

/// `sha256=<hex>`: the HMAC-SHA256 of `body` under `secret`.
pub(super) fn signature(secret: &[u8], body: &[u8]) -> String {
    let key = hmac::Key::new(hmac::HMAC_SHA256, secret);
    format!(
        "sha256={}",
        crate::text::hex(hmac::sign(&key, body).as_ref())
    )
}

/// The secret in `file`, made (32 random bytes, hex, readable by the user alone) when missing.
fn secret(file: &Path) -> std::io::Result<Vec<u8>> {
    match std::fs::read_to_string(file) {
        Ok(text) if !text.trim().is_empty() => return Ok(text.trim().as_bytes().to_vec()),
        Ok(_) => {}
        Err(e) if e.kind() == std::io::ErrorKind::NotFound => {}
        Err(e) => return Err(e),
    }
    if let Some(dir) = file.parent() {
        std::fs::create_dir_all(dir)?;
    }
    let mut bytes = [0u8; 32];
    rand::fill(&mut bytes);
    let text = crate::text::hex(&bytes);
    // create_new: of two daemons making it at once, one wins and the other reads its secret.
    match std::fs::OpenOptions::new()
        .write(true)
        .create_new(true)
        .mode(0o600)
        .open(file)
    {
        Ok(mut out) => {
            out.write_all(text.as_bytes())?;
            out.sync_all()?;
            Ok(text.into_bytes())
        }
        Err(e) if e.kind() == std::io::ErrorKind::AlreadyExists => {
            Ok(std::fs::read_to_string(file)?.trim().as_bytes().to_vec())
        }
        Err(e) => Err(e),
    }
}

#[cfg(test)]
mod tests {
    use std::os::unix::fs::PermissionsExt;

    use super::*;

    #[test]
    fn the_secret_is_made_once_private_and_signs_as_hmac_sha256() {
        let dir = tempfile::tempdir().unwrap();
        let file = dir.path().join("agents/webhook-secret");
        let first = secret(&file).unwrap();
        assert_eq!(first.len(), 64);
        assert_eq!(secret(&file).unwrap(), first);
        let mode = std::fs::metadata(&file).unwrap().permissions().mode();
        assert_eq!(mode & 0o777, 0o600);
        // RFC 4231, test case 2.
        assert_eq!(
            signature(b"Jefe", b"what do ya want for nothing?"),
            "sha256=5bdcc146bf60754e6a042426089575c75a003f089d2739839dec58b964ec3843"
        );
    }
}
