//! The command center: a single page, embedded in the binary (it works offline: no CDN, no
//! font), served without the token (it holds no data) under a strict Content-Security-Policy.

use axum::http::{HeaderMap, HeaderValue, StatusCode, header};
use axum::response::{IntoResponse, Response};

const CSP: &str = "default-src 'none'; script-src 'self'; style-src 'self'; img-src 'self' data:; connect-src 'self'; base-uri 'none'; form-action 'self'; frame-ancestors 'none'";

struct Asset {
    body: &'static [u8],
    content_type: &'static str,
}

const INDEX: Asset = Asset {
    body: include_bytes!("../../web/index.html"),
    content_type: "text/html; charset=utf-8",
};
const SCRIPT: Asset = Asset {
    body: include_bytes!("../../web/app.js"),
    content_type: "text/javascript; charset=utf-8",
};
const RENDER: Asset = Asset {
    body: include_bytes!("../../web/render.js"),
    content_type: "text/javascript; charset=utf-8",
};
const MEMORY: Asset = Asset {
    body: include_bytes!("../../web/memory.js"),
    content_type: "text/javascript; charset=utf-8",
};
const STYLE: Asset = Asset {
    body: include_bytes!("../../web/style.css"),
    content_type: "text/css; charset=utf-8",
};

/// A strong validator for an asset: it changes with every build that changes the file.
fn etag(body: &[u8]) -> String {
    use std::hash::{Hash, Hasher};
    let mut hasher = std::collections::hash_map::DefaultHasher::new();
    body.hash(&mut hasher);
    format!("\"{:016x}\"", hasher.finish())
}

fn serve(asset: &Asset, request: &HeaderMap) -> Response {
    let tag = etag(asset.body);
    let fresh = request
        .get(header::IF_NONE_MATCH)
        .and_then(|v| v.to_str().ok())
        .is_some_and(|v| v == tag);
    let mut response = if fresh {
        StatusCode::NOT_MODIFIED.into_response()
    } else {
        asset.body.into_response()
    };
    let headers = response.headers_mut();
    headers.insert(
        header::CONTENT_TYPE,
        HeaderValue::from_static(asset.content_type),
    );
    // Always revalidated: a new ouro serves a new page at once.
    headers.insert(header::CACHE_CONTROL, HeaderValue::from_static("no-cache"));
    if let Ok(value) = HeaderValue::from_str(&tag) {
        headers.insert(header::ETAG, value);
    }
    headers.insert(
        header::CONTENT_SECURITY_POLICY,
        HeaderValue::from_static(CSP),
    );
    headers.insert(
        header::X_CONTENT_TYPE_OPTIONS,
        HeaderValue::from_static("nosniff"),
    );
    headers.insert(
        header::REFERRER_POLICY,
        HeaderValue::from_static("no-referrer"),
    );
    response
}

pub(super) async fn index(headers: HeaderMap) -> Response {
    serve(&INDEX, &headers)
}

pub(super) async fn script(headers: HeaderMap) -> Response {
    serve(&SCRIPT, &headers)
}

/// The page's markdown and tool-call rendering, a module of its own that `app.js` imports.
pub(super) async fn render(headers: HeaderMap) -> Response {
    serve(&RENDER, &headers)
}

/// The Memory view: the knowledge graph around a node, drawn as SVG.
pub(super) async fn memory(headers: HeaderMap) -> Response {
    serve(&MEMORY, &headers)
}

pub(super) async fn style(headers: HeaderMap) -> Response {
    serve(&STYLE, &headers)
}
