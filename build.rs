//! Has the linker place the functions a session runs together at the start of the binary's
//! text (`benches/symbol-order.txt`, written by `benches/symbol_order.py`): the kernel maps
//! text 64 KB at a time around each page that runs, so scattered, those functions would bring
//! in nearly all of it (about 6 MB more memory per session, and more page faults at start-up).
//! Only where the linker is known to be LLD, which reads the list; elsewhere the build is as
//! before.

use std::path::Path;

fn main() {
    println!("cargo::rerun-if-changed=build.rs");
    println!("cargo::rerun-if-changed=benches/symbol-order.txt");
    println!("cargo::rerun-if-env-changed=OURO_SYMBOL_ORDER");
    if std::env::var("OURO_SYMBOL_ORDER").is_ok_and(|v| v == "0") || !default_linker_is_lld() {
        return;
    }
    let dir = std::env::var("CARGO_MANIFEST_DIR").unwrap_or_default();
    let list = Path::new(&dir).join("benches/symbol-order.txt");
    if list.is_file() {
        println!(
            "cargo::rustc-link-arg-bins=-Wl,--symbol-ordering-file={},--no-warn-symbol-ordering",
            list.display()
        );
    }
}

/// Rust links x86_64 Linux programs with its own LLD from 1.90 on, unless flags say otherwise.
fn default_linker_is_lld() -> bool {
    let target = std::env::var("TARGET").unwrap_or_default();
    let flags = std::env::var("CARGO_ENCODED_RUSTFLAGS").unwrap_or_default();
    // A linker set in Cargo's configuration reaches build scripts as RUSTC_LINKER.
    let configured = std::env::var_os("RUSTC_LINKER").is_some()
        || std::env::vars()
            .any(|(key, _)| key.starts_with("CARGO_TARGET_") && key.ends_with("_LINKER"));
    let rustc = std::env::var("RUSTC").unwrap_or_else(|_| "rustc".into());
    let minor = std::process::Command::new(rustc)
        .arg("--version")
        .output()
        .ok()
        .and_then(|out| {
            let text = String::from_utf8_lossy(&out.stdout).into_owned();
            let version = text.split_whitespace().nth(1)?.to_owned();
            version.split('.').nth(1)?.parse::<u32>().ok()
        })
        .unwrap_or(0);
    target == "x86_64-unknown-linux-gnu"
        && minor >= 90
        && !configured
        && !flags.contains("linker")
        && !flags.contains("fuse-ld")
}
