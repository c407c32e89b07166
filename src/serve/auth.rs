//! Who may use the API. One popular agent server shipped without authentication and with
//! permissive CORS, so any web page a user opened could run commands through it; here every
//! API request needs the server's token (as a bearer token, or the cookie the web app gets
//! for it), a `Host` that names this server (no DNS rebinding) and no foreign `Origin`.

use std::io::Write as _;
use std::net::IpAddr;
use std::os::unix::fs::OpenOptionsExt;
use std::path::Path;
use std::sync::Arc;

use axum::extract::{Request, State};
use axum::http::{HeaderMap, StatusCode, header};
use axum::middleware::Next;
use axum::response::{IntoResponse, Response};

use super::error::ApiError;
use super::state::AppState;

/// The cookie the web app holds after `POST /api/auth`.
pub(super) const COOKIE: &str = "ouro_serve_token";

/// The shortest token accepted: a guessable one would open the API to anyone on the machine.
const MIN_TOKEN_BYTES: usize = 32;

/// The token in `file`, made (64 hex digits) on first start; the file is made the user's alone
/// (mode 0600) on every start, and a token under [`MIN_TOKEN_BYTES`] is refused.
pub(super) fn load_or_create(file: &Path) -> std::io::Result<String> {
    use std::os::unix::fs::PermissionsExt;
    match std::fs::read_to_string(file) {
        Ok(text) if !text.trim().is_empty() => {
            // A file someone else provides (a mounted secret, read-only) is theirs to protect.
            if let Err(e) = std::fs::set_permissions(file, std::fs::Permissions::from_mode(0o600)) {
                eprintln!(
                    "warning: could not make the token file {} readable by you alone ({e})",
                    file.display()
                );
            }
            let token = text.trim();
            if token.len() < MIN_TOKEN_BYTES {
                return Err(std::io::Error::new(
                    std::io::ErrorKind::InvalidData,
                    format!(
                        "its token has {} bytes, and a token needs at least {MIN_TOKEN_BYTES}; delete the file to have a new one made, or put a longer one in it",
                        token.len()
                    ),
                ));
            }
            return Ok(token.to_string());
        }
        Ok(_) => {}
        Err(e) if e.kind() == std::io::ErrorKind::NotFound => {}
        Err(e) => return Err(e),
    }
    if let Some(dir) = file.parent() {
        std::fs::create_dir_all(dir)?;
    }
    let token: String = (0..32)
        .map(|_| format!("{:02x}", rand::random::<u8>()))
        .collect();
    std::fs::OpenOptions::new()
        .write(true)
        .create(true)
        .truncate(true)
        .mode(0o600)
        .open(file)?
        .write_all(token.as_bytes())?;
    Ok(token)
}

/// Equal in time independent of where they differ.
pub(super) fn same(a: &str, b: &str) -> bool {
    a.len() == b.len()
        && a.bytes()
            .zip(b.bytes())
            .fold(0u8, |acc, (x, y)| acc | (x ^ y))
            == 0
}

/// The token a request carries, as a bearer token or the web app's cookie.
fn presented(headers: &HeaderMap) -> Option<String> {
    if let Some(bearer) = headers
        .get(header::AUTHORIZATION)
        .and_then(|v| v.to_str().ok())
        // The scheme's name is case-insensitive (RFC 9110).
        .and_then(|v| {
            v.get(..7)
                .filter(|s| s.eq_ignore_ascii_case("bearer "))
                .map(|_| &v[7..])
        })
    {
        return Some(bearer.trim().to_string());
    }
    headers
        .get_all(header::COOKIE)
        .iter()
        .filter_map(|v| v.to_str().ok())
        .flat_map(|v| v.split(';'))
        .filter_map(|pair| pair.trim().split_once('='))
        .find(|(name, _)| *name == COOKIE)
        .map(|(_, value)| value.to_string())
}

/// Whether `host` (a `Host` header: name or address, maybe a port) names this server: a
/// loopback name or address, the name it was started with, or any address literal (an address
/// cannot be rebound to another site).
pub(super) fn host_allowed(host: &str, own_host: &str) -> bool {
    let name = match host.strip_prefix('[') {
        Some(rest) => rest.split(']').next().unwrap_or(""),
        None => host.rsplit_once(':').map_or(host, |(name, port)| {
            if port.chars().all(|c| c.is_ascii_digit()) {
                name
            } else {
                host
            }
        }),
    };
    let name = name.to_ascii_lowercase();
    name == "localhost"
        || name.ends_with(".localhost")
        || name == own_host.to_ascii_lowercase()
        || name.parse::<IpAddr>().is_ok()
}

/// Whether `origin` may call the API: the server's own (same scheme, host and port as the
/// request's `Host`) or the one `--allow-origin` names.
pub(super) fn origin_allowed(origin: &str, host: &str, allowed: Option<&str>) -> bool {
    let origin = origin.trim_end_matches('/');
    origin == format!("http://{host}") || allowed.is_some_and(|a| a.trim_end_matches('/') == origin)
}

/// The guard in front of every route.
pub(super) async fn guard(
    State(state): State<Arc<AppState>>,
    request: Request,
    next: Next,
) -> Response {
    let headers = request.headers();
    let host = headers
        .get(header::HOST)
        .and_then(|v| v.to_str().ok())
        .unwrap_or("");
    if !host_allowed(host, &state.options.host) {
        return ApiError::new(
            StatusCode::FORBIDDEN,
            "forbidden_host",
            format!("the Host \"{host}\" does not name this server; open it by its own address (http://{})", state.address),
        )
        .into_response();
    }
    if let Some(origin) = headers.get(header::ORIGIN).and_then(|v| v.to_str().ok())
        && !origin_allowed(origin, host, state.options.allow_origin.as_deref())
    {
        return ApiError::new(
            StatusCode::FORBIDDEN,
            "forbidden_origin",
            format!("requests from {origin} are not allowed; start the server with --allow-origin {origin} to allow that site"),
        )
        .into_response();
    }
    let allow_origin = state.options.allow_origin.clone();
    let mut response = admitted(state, request, next).await;
    // Every answer to the allowed site carries the header, errors too: without it the page
    // sees an opaque failure instead of the error's sentence.
    if let Some(origin) = allow_origin
        && let Ok(value) = origin.parse()
    {
        response
            .headers_mut()
            .insert(header::ACCESS_CONTROL_ALLOW_ORIGIN, value);
    }
    response
}

/// The request past the host and origin checks: too big, a preflight, without the token, or
/// served.
async fn admitted(state: Arc<AppState>, request: Request, next: Next) -> Response {
    let headers = request.headers();
    // A body announced too big is refused before a byte of it is read.
    let announced = headers
        .get(header::CONTENT_LENGTH)
        .and_then(|v| v.to_str().ok())
        .and_then(|v| v.parse::<usize>().ok());
    if announced.is_some_and(|n| n > super::error::BODY_LIMIT) {
        return ApiError::too_large().into_response();
    }
    if request.method() == axum::http::Method::OPTIONS {
        return preflight(headers, state.options.allow_origin.as_deref());
    }
    let path = request.uri().path();
    let open = !path.starts_with("/api/") || path == "/api/auth";
    if !open && !presented(headers).is_some_and(|t| same(&t, &state.token)) {
        return ApiError::new(
            StatusCode::UNAUTHORIZED,
            "unauthorized",
            format!(
                "this API needs the server's token: send \"Authorization: Bearer <token>\" (the token is in {})",
                state.token_file.display()
            ),
        )
        .into_response();
    }
    next.run(request).await
}

/// A browser's CORS preflight: answered for the origin `--allow-origin` names, refused for
/// any other (it carries no token, so it is answered before the token check).
fn preflight(headers: &HeaderMap, allowed: Option<&str>) -> Response {
    let origin = headers
        .get(header::ORIGIN)
        .and_then(|v| v.to_str().ok())
        .unwrap_or("");
    let Some(allowed) = allowed.filter(|a| a.trim_end_matches('/') == origin.trim_end_matches('/'))
    else {
        return ApiError::new(
            StatusCode::FORBIDDEN,
            "forbidden_origin",
            "cross-site requests are refused; start the server with --allow-origin <origin> to allow one site",
        )
        .into_response();
    };
    let mut response = StatusCode::NO_CONTENT.into_response();
    let out = response.headers_mut();
    for (name, value) in [
        (header::ACCESS_CONTROL_ALLOW_ORIGIN, allowed),
        (header::ACCESS_CONTROL_ALLOW_METHODS, "GET, POST, DELETE"),
        (
            header::ACCESS_CONTROL_ALLOW_HEADERS,
            "Authorization, Content-Type, Last-Event-ID",
        ),
        (header::ACCESS_CONTROL_MAX_AGE, "600"),
        (header::VARY, "Origin"),
    ] {
        if let Ok(value) = value.parse() {
            out.insert(name, value);
        }
    }
    response
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn hosts_are_loopback_names_addresses_or_the_servers_own() {
        for ok in [
            "127.0.0.1:8417",
            "localhost:8417",
            "[::1]:8417",
            "LOCALHOST",
            "10.0.0.5:80",
            "box.lan:8417",
        ] {
            assert!(host_allowed(ok, "box.lan"), "{ok}");
        }
        for bad in [
            "evil.example:8417",
            "attacker.com",
            "",
            "localhost.evil.com",
        ] {
            assert!(!host_allowed(bad, "127.0.0.1"), "{bad}");
        }
    }

    #[test]
    fn origins_are_the_servers_own_or_the_allowed_one() {
        assert!(origin_allowed(
            "http://127.0.0.1:8417",
            "127.0.0.1:8417",
            None
        ));
        assert!(!origin_allowed(
            "https://evil.example",
            "127.0.0.1:8417",
            None
        ));
        assert!(!origin_allowed(
            "http://127.0.0.1:9999",
            "127.0.0.1:8417",
            None
        ));
        assert!(origin_allowed(
            "https://app.example/",
            "127.0.0.1:8417",
            Some("https://app.example")
        ));
    }

    #[test]
    fn the_token_is_made_once_private_and_compared_whole() {
        use std::os::unix::fs::PermissionsExt;
        let dir = tempfile::tempdir().unwrap();
        let file = dir.path().join("serve/token");
        let token = load_or_create(&file).unwrap();
        assert_eq!(token.len(), 64);
        assert_eq!(load_or_create(&file).unwrap(), token);
        let mode = std::fs::metadata(&file).unwrap().permissions().mode() & 0o777;
        assert_eq!(mode, 0o600);
        // A file another program made readable is made private again on the next start.
        std::fs::set_permissions(&file, std::fs::Permissions::from_mode(0o644)).unwrap();
        assert_eq!(load_or_create(&file).unwrap(), token);
        let mode = std::fs::metadata(&file).unwrap().permissions().mode() & 0o777;
        assert_eq!(mode, 0o600);
        let short = dir.path().join("short");
        std::fs::write(&short, "x\n").unwrap();
        let err = load_or_create(&short).unwrap_err();
        assert!(err.to_string().contains("at least 32"), "{err}");
        assert!(same(&token, &token.clone()));
        assert!(!same(&token, &token[1..]));
        let mut headers = HeaderMap::new();
        headers.insert(
            header::COOKIE,
            format!("a=b; {COOKIE}={token}").parse().unwrap(),
        );
        assert_eq!(presented(&headers), Some(token));
    }
}
