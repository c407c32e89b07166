//! The harness every test module shares.

#![allow(dead_code)]

#[cfg(feature = "mock")]
mod harness;
#[cfg(feature = "mock")]
pub(crate) mod pty;
pub(crate) mod secrets;
pub(crate) mod skip;

#[cfg(feature = "mock")]
pub(crate) use harness::*;

/// Runs git in `dir` as a fixed author, asserting it succeeded; its standard output.
pub(crate) fn git(dir: &std::path::Path, args: &[&str]) -> String {
    let out = std::process::Command::new("git")
        .args(args)
        .current_dir(dir)
        .env("GIT_AUTHOR_NAME", "t")
        .env("GIT_AUTHOR_EMAIL", "t@t")
        .env("GIT_COMMITTER_NAME", "t")
        .env("GIT_COMMITTER_EMAIL", "t@t")
        .output()
        .unwrap();
    assert!(out.status.success(), "git {args:?}: {out:?}");
    String::from_utf8_lossy(&out.stdout).into_owned()
}
