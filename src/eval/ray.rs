//! The Ray Jobs REST API of a Ray head's dashboard, for `ouro eval --backend ray`: plain HTTP,
//! so ouro needs no Python or Ray. Packages are named and zipped as Ray's own client does
//! (`_private/runtime_env/packaging.py`, Ray 2.60) so an unchanged directory is not uploaded
//! twice, with Unix modes, which Ray 2.60 restores; unlike it, no `.gitignore` is read.

use std::collections::BTreeMap;
use std::fs;
use std::io::Cursor;
use std::os::unix::fs::PermissionsExt;
use std::path::{Path, PathBuf};
use std::time::Duration;

use reqwest::{Method, RequestBuilder, StatusCode, Url};
use sha1::{Digest, Sha1};

/// Every call but the upload answers in milliseconds; a head that takes a minute is stuck.
const CALL_TIMEOUT: Duration = Duration::from_secs(60);
/// A package may be hundreds of MiB going to a remote head.
const UPLOAD_TIMEOUT: Duration = Duration::from_secs(900);

#[derive(Debug, thiserror::Error)]
pub(super) enum RayError {
    #[error("`{address}` is not a Ray dashboard address ({reason}): give it as host:8265")]
    Address { address: String, reason: String },
    #[error("cannot reach the Ray dashboard at {url} ({reason}): is `ray start --head` up?")]
    Unreachable { url: String, reason: String },
    #[error("the Ray dashboard refused {what} ({detail}): set RAY_AUTH_TOKEN to the head's token")]
    Unauthorized { what: String, detail: String },
    #[error("Ray has no job `{0}`: check the id with `ray job list` (was the head restarted?)")]
    NoSuchJob(String),
    #[error("the Ray dashboard answered {what} with {detail}; its dashboard.log has the rest")]
    Refused { what: String, detail: String },
    #[error("the Ray dashboard's answer to {what} is not understood ({reason}): is it Ray 2.x?")]
    Protocol { what: String, reason: String },
    #[error("cannot pack {} for Ray: {reason}", path.display())]
    Pack { path: PathBuf, reason: String },
}

/// What Ray says of a job; `Failed` carries Ray's message (exit code and last lines of log).
#[derive(Debug, Clone, PartialEq)]
pub(super) enum JobStatus {
    Pending,
    Running,
    Stopped,
    Succeeded,
    Failed(String),
}

pub(super) struct RayJobs {
    base: Url,
    http: reqwest::Client,
    token: Option<String>,
}

impl RayJobs {
    /// A head started with `RAY_AUTH_MODE=token` wants the token in RAY_AUTH_TOKEN, as Ray's CLI.
    pub(super) fn new(address: &str) -> Result<RayJobs, RayError> {
        let base = normalize_address(address)?;
        crate::api::client::install_crypto();
        let mut builder = reqwest::Client::builder()
            .connect_timeout(Duration::from_secs(10))
            .timeout(CALL_TIMEOUT);
        if base.scheme() == "http" {
            // A head on the local network: loading the system's certificates would be wasted.
            builder = builder.tls_certs_only(std::iter::empty());
        }
        let http = builder.build().map_err(unreachable(&base))?;
        let token = std::env::var("RAY_AUTH_TOKEN").ok();
        let token = token.filter(|t| !t.trim().is_empty());
        Ok(RayJobs { base, http, token })
    }

    /// Uploads `dir` (zipped in memory) as a working_dir package the way Ray's own client does
    /// (GET then PUT /api/packages/gcs/<name>), returning the URI (`gcs://_ray_pkg_<hash>.zip`)
    /// to put in runtime_env.working_dir. Skips the upload when the package already exists.
    pub(super) async fn upload_dir(&self, dir: &Path) -> Result<String, RayError> {
        let entries = list_dir(dir)?;
        let name = package_name(&entries)?;
        let path = ["api", "packages", "gcs", &name];
        // The GET also pins the package for a while (RAY_RUNTIME_ENV_URI_PIN_EXPIRATION_S), so
        // the head does not collect it between this call and the job's start.
        let answer = self.call(self.request(Method::GET, &path)).await?;
        if answer.status == StatusCode::NOT_FOUND {
            let upload = self.request(Method::PUT, &path).timeout(UPLOAD_TIMEOUT);
            let upload = upload.body(zip_entries(dir, &entries)?);
            self.call(upload).await?.ok()?;
        } else {
            answer.ok()?;
        }
        Ok(format!("gcs://{name}"))
    }

    /// POST /api/jobs/ with entrypoint, submission_id, runtime_env {working_dir, env_vars};
    /// returns the submission id.
    pub(super) async fn submit(
        &self,
        submission_id: &str,
        entrypoint: &str,
        working_dir_uri: &str,
        env: &BTreeMap<String, String>,
    ) -> Result<String, RayError> {
        let body = serde_json::json!({
            "entrypoint": entrypoint,
            "submission_id": submission_id,
            "runtime_env": { "working_dir": working_dir_uri, "env_vars": env },
        });
        let request = self.request(Method::POST, &["api", "jobs", ""]).json(&body);
        self.call(request).await?.ok()?.get("submission_id")
    }

    pub(super) async fn status(&self, id: &str) -> Result<JobStatus, RayError> {
        let answer = self.job(Method::GET, id, &[]).await?;
        let what = answer.what;
        parse_status(&answer.text).map_err(|reason| RayError::Protocol { what, reason })
    }

    /// The job's whole log so far (the entrypoint's stdout and stderr, interleaved).
    pub(super) async fn logs(&self, id: &str) -> Result<String, RayError> {
        self.job(Method::GET, id, &["logs"]).await?.get("logs")
    }

    /// Asks Ray to stop the job; false when it had already ended. Ray sends SIGTERM to the
    /// entrypoint, then SIGKILL after RAY_JOB_STOP_WAIT_TIME_S (3 s by default).
    pub(super) async fn stop(&self, id: &str) -> Result<bool, RayError> {
        self.job(Method::POST, id, &["stop"]).await?.get("stopped")
    }

    /// A call about one job (`api/jobs/<id>/...`), where 404 means Ray knows no such job.
    async fn job(&self, method: Method, id: &str, rest: &[&str]) -> Result<Answer, RayError> {
        let path: Vec<&str> = ["api", "jobs", id].iter().chain(rest).copied().collect();
        let answer = self.call(self.request(method, &path)).await?;
        match answer.status {
            StatusCode::NOT_FOUND => Err(RayError::NoSuchJob(id.to_string())),
            _ => answer.ok(),
        }
    }

    /// `path`'s segments percent-encoded (ids come from callers) after the address's own path.
    fn request(&self, method: Method, path: &[&str]) -> RequestBuilder {
        let mut url = self.base.clone();
        if let Ok(mut segments) = url.path_segments_mut() {
            segments.pop_if_empty().extend(path);
        }
        let request = self.http.request(method, url);
        self.token
            .iter()
            .fold(request, |r, token| r.bearer_auth(token))
    }

    async fn call(&self, request: RequestBuilder) -> Result<Answer, RayError> {
        let (http, request) = request.build_split();
        let request = request.map_err(unreachable(&self.base))?;
        let what = format!("{} {}", request.method(), request.url().path());
        let response = http.execute(request).await;
        let response = response.map_err(unreachable(&self.base))?;
        let status = response.status();
        let text = response.text().await.map_err(unreachable(&self.base))?;
        if status == StatusCode::UNAUTHORIZED || status == StatusCode::FORBIDDEN {
            let detail = format!("{status}: {}", last_line(&text));
            return Err(RayError::Unauthorized { what, detail });
        }
        Ok(Answer { what, status, text })
    }
}

/// One HTTP answer of the dashboard; `what` names the request (`GET /api/jobs/x`) in errors.
struct Answer {
    what: String,
    status: StatusCode,
    text: String,
}

impl Answer {
    fn ok(self) -> Result<Answer, RayError> {
        if self.status == StatusCode::OK {
            return Ok(self);
        }
        let detail = format!("{}: {}", self.status, last_line(&self.text));
        let what = self.what;
        Err(RayError::Refused { what, detail })
    }

    /// One field of a JSON answer (`{"logs": …}`, `{"stopped": …}`, `{"submission_id": …}`).
    fn get<T: serde::de::DeserializeOwned>(self, key: &str) -> Result<T, RayError> {
        let answer = serde_json::from_str::<serde_json::Value>(&self.text).ok();
        let value = answer.and_then(|mut a| a.get_mut(key).map(serde_json::Value::take));
        if let Some(parsed) = value.and_then(|v| serde_json::from_value(v).ok()) {
            return Ok(parsed);
        }
        let reason = format!("no `{key}` as expected in {}", last_line(&self.text));
        let what = self.what;
        Err(RayError::Protocol { what, reason })
    }
}

fn last_line(text: &str) -> String {
    let mut lines = text.lines().rev().map(str::trim);
    // Ray's tracebacks end with a line of a lone ".".
    let line = lines.find(|l| l.chars().any(char::is_alphanumeric));
    let line = line.unwrap_or("(no detail)");
    line.chars().take(400).collect()
}

/// "host:8265", "http://host:8265/" and "https://proxy/ray" all name a dashboard.
fn normalize_address(address: &str) -> Result<Url, RayError> {
    let trimmed = address.trim();
    let full = match trimmed.contains("://") {
        true => trimmed.to_string(),
        false => format!("http://{trimmed}"),
    };
    let url = Url::parse(&full).map_err(|e| e.to_string());
    let url = url.and_then(|url| match url.scheme() {
        // ray:// is the likeliest: the Ray Client's port (10001), another protocol.
        "http" | "https" => Ok(url),
        _ => Err("the dashboard speaks http(s) only, on port 8265 by default".to_string()),
    });
    let address = address.to_string();
    url.map_err(|reason| RayError::Address { address, reason })
}

/// Ray's job details: `status` is one of five words; `message` says why a job failed.
fn parse_status(text: &str) -> Result<JobStatus, String> {
    let details: serde_json::Value = serde_json::from_str(text).map_err(|e| e.to_string())?;
    Ok(match details["status"].as_str().unwrap_or_default() {
        "PENDING" => JobStatus::Pending,
        "RUNNING" => JobStatus::Running,
        "STOPPED" => JobStatus::Stopped,
        "SUCCEEDED" => JobStatus::Succeeded,
        "FAILED" => JobStatus::Failed(details["message"].as_str().unwrap_or_default().into()),
        other => return Err(format!("unknown job status `{other}`")),
    })
}

/// Every path under `root`, paired with Python's `str(path.relative_to(root))`: the root
/// itself first as ".", symlinks followed (Ray's client does both).
fn list_dir(root: &Path) -> Result<Vec<(String, PathBuf)>, RayError> {
    if !fs::metadata(root).map_err(pack(root))?.is_dir() {
        return Err(pack(root)("it is not a directory"));
    }
    let mut entries = vec![(".".to_string(), root.to_path_buf())];
    let mut next = 0;
    while let Some((rel, path)) = entries.get(next).cloned() {
        next += 1;
        // Deeper than any real tree: only a symlink loop gets here (Ray's would recurse on).
        if rel.matches('/').count() > 64 {
            return Err(pack(&path)("it is nested too deep (a symlink loop?)"));
        }
        if !fs::metadata(&path).map_err(pack(&path))?.is_dir() {
            continue;
        }
        let prefix = if rel == "." { "" } else { rel.as_str() };
        let mut children = Vec::new();
        for child in fs::read_dir(&path).map_err(pack(&path))? {
            let child = child.map_err(pack(&path))?.path();
            let name = child.file_name().and_then(|n| n.to_str());
            let name = name.ok_or_else(|| pack(&child)("a Ray package takes UTF-8 names only"))?;
            let child_rel = format!("{prefix}/{name}");
            children.push((child_rel.trim_start_matches('/').to_string(), child));
        }
        children.sort();
        entries.extend(children);
    }
    Ok(entries)
}

/// Ray's `get_uri_for_directory`: for every path (the root as "."), SHA-1 of its relative path
/// and, for a file, its bytes; XORed together onto b"00000000", which keeps 8 bytes only
/// (Python's `zip` stops at the shorter side), so the name has 16 hex digits.
fn package_name(entries: &[(String, PathBuf)]) -> Result<String, RayError> {
    let mut acc = *b"00000000";
    for (rel, path) in entries {
        let mut sha = Sha1::new();
        sha.update(rel.as_bytes());
        if !fs::metadata(path).map_err(pack(path))?.is_dir() {
            let mut file = fs::File::open(path).map_err(pack(path))?;
            std::io::copy(&mut file, &mut sha).map_err(pack(path))?;
        }
        for (a, b) in acc.iter_mut().zip(sha.finalize()) {
            *a ^= b;
        }
    }
    let hex: String = acc.iter().map(|b| format!("{b:02x}")).collect();
    Ok(format!("_ray_pkg_{hex}.zip"))
}

/// Ray's `_zip_files` with `include_parent_dir=False`: files and empty directories, named
/// relative to the root (no top-level directory), Unix mode in the external attributes. Ray
/// stores; deflate shrinks a shipped binary to about 40% on the wire and in the GCS.
fn zip_entries(root: &Path, entries: &[(String, PathBuf)]) -> Result<Vec<u8>, RayError> {
    let mut zip = zip::ZipWriter::new(Cursor::new(Vec::new()));
    for (rel, path) in entries {
        let meta = fs::metadata(path).map_err(pack(path))?;
        let mode = meta.permissions().mode() & 0o7777;
        let options = zip::write::SimpleFileOptions::default().unix_permissions(mode);
        if !meta.is_dir() {
            let options = options.compression_method(zip::CompressionMethod::Deflated);
            zip.start_file(rel, options).map_err(pack(path))?;
            let mut file = fs::File::open(path).map_err(pack(path))?;
            std::io::copy(&mut file, &mut zip).map_err(pack(path))?;
        } else if rel != "." && fs::read_dir(path).map_err(pack(path))?.next().is_none() {
            zip.add_directory(rel, options).map_err(pack(path))?;
        }
    }
    Ok(zip.finish().map_err(pack(root))?.into_inner())
}

/// reqwest's own text names only the URL: the innermost cause says what went wrong.
fn unreachable(url: &Url) -> impl Fn(reqwest::Error) -> RayError + '_ {
    |e| {
        let causes = std::iter::successors(Some(&e as &dyn std::error::Error), |e| e.source());
        let reason = causes.last().map(|c| c.to_string()).unwrap_or_default();
        let url = url.to_string();
        RayError::Unreachable { url, reason }
    }
}

fn pack<E: std::fmt::Display>(path: &Path) -> impl Fn(E) -> RayError + '_ {
    |e| RayError::Pack {
        path: path.to_path_buf(),
        reason: e.to_string(),
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn addresses_and_urls() {
        let base = |a: &str| normalize_address(a).map(|u| u.to_string());
        assert_eq!(base(" 127.0.0.1:8265").unwrap(), "http://127.0.0.1:8265/");
        for bad in ["", "ray://head:10001", "ftp://head", "http://"] {
            assert!(matches!(base(bad), Err(RayError::Address { .. })), "{bad}");
        }
        let url = |a: &str, path: &[&str]| {
            let request = RayJobs::new(a).unwrap().request(Method::GET, path);
            request.build().unwrap().url().to_string()
        };
        let proxied = url("https://proxy/ray/", &["api", "jobs", ""]);
        assert_eq!(proxied, "https://proxy/ray/api/jobs/");
        let encoded = url("head:8265", &["api", "jobs", "a/b c"]);
        assert_eq!(encoded, "http://head:8265/api/jobs/a%2Fb%20c");
    }

    #[test]
    fn package_matches_rays_client() {
        // Ray 2.60's get_uri_for_directory named this tree gcs://_ray_pkg_ab3f82ae2644f764.zip.
        let dir = tempfile::tempdir().unwrap();
        let root = dir.path();
        fs::create_dir_all(root.join("sub")).unwrap();
        fs::create_dir_all(root.join("emptydir")).unwrap();
        let script = "#!/bin/sh\necho \"MARKER-OURO-RAY $OURO_PROBE\"\necho \"args: $@\"\n";
        fs::write(root.join("run.sh"), script).unwrap();
        fs::set_permissions(root.join("run.sh"), fs::Permissions::from_mode(0o755)).unwrap();
        fs::write(root.join("sub/data.txt"), "hello\n").unwrap();
        let entries = list_dir(root).unwrap();
        let name = package_name(&entries).unwrap();
        assert_eq!(name, "_ray_pkg_ab3f82ae2644f764.zip");
        let zip = zip_entries(root, &entries).unwrap();
        let mut archive = zip::ZipArchive::new(Cursor::new(zip)).unwrap();
        let mut names = Vec::new();
        for i in 0..archive.len() {
            let file = archive.by_index(i).unwrap();
            let mode = file.unix_mode().unwrap();
            names.push(format!("{} {mode:o}", file.name().unwrap()));
        }
        let want = ["emptydir/ 40755", "run.sh 100755", "sub/data.txt 100644"];
        assert_eq!(names, want);
    }

    #[test]
    fn answers_parse() {
        let failed = JobStatus::Failed("code 3".into());
        let cases = [
            (r#"{"status":"PENDING","message":null}"#, JobStatus::Pending),
            (r#"{"status":"RUNNING","extra":1}"#, JobStatus::Running),
            (r#"{"status":"STOPPED","message":"x"}"#, JobStatus::Stopped),
            (r#"{"status":"SUCCEEDED"}"#, JobStatus::Succeeded),
            (r#"{"status":"FAILED","message":"code 3"}"#, failed),
        ];
        for (text, want) in cases {
            assert_eq!(parse_status(text), Ok(want));
        }
        assert!(parse_status(r#"{"status":"EXPLODED"}"#).is_err());
        let answer = |status: StatusCode, text: &str| {
            let (what, text) = ("POST /api/jobs/x/stop".into(), text.into());
            Answer { what, status, text }
        };
        let stopped = answer(StatusCode::OK, r#"{"stopped": true}"#).get::<bool>("stopped");
        assert!(stopped.unwrap());
        let missing = answer(StatusCode::OK, "{}").get::<String>("logs");
        assert!(matches!(missing, Err(RayError::Protocol { .. })));
        let traceback = "Traceback (most recent call last):\n  File \"x\"\nValueError: taken.\n.\n";
        let refused = answer(StatusCode::BAD_REQUEST, traceback).ok();
        let refused = refused.err().map(|e| e.to_string()).unwrap_or_default();
        assert!(refused.contains("400 Bad Request: ValueError: taken.;"));
    }
}
