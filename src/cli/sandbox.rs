//! `ouro sandbox check`: what the kernel can enforce, and the sandbox a Bash call in this
//! directory would get, read-only (auto-allowed) and approved.

use std::fmt::Write as _;
use std::path::{Path, PathBuf};
use std::time::Duration;

use crate::permissions::{CliPermissions, Confinement, PermissionEngine};
use crate::settings::LayeredSettings;
use crate::sys::process::spawn_cost;
use crate::sys::sandbox::{Policy, Support};
use crate::tools::bash::SandboxConfig;

/// Spawns per measurement (alternating unconfined and confined).
const PROBES: usize = 21;

fn ms(d: Duration) -> f64 {
    d.as_secs_f64() * 1000.0
}

pub async fn check(cwd: &Path) -> anyhow::Result<String> {
    let root = crate::app::project_root(cwd);
    let layered = LayeredSettings::load(&root)?;
    let permissions = PermissionEngine::from_settings(&root, &layered, &CliPermissions::default())?;
    let config = SandboxConfig::from_settings(
        &layered.merged().sandbox,
        &root,
        permissions.additional_dirs(),
    );
    crate::tools::bash::quiet_warnings();
    let support = Support::detect();
    let mut out = format!("Kernel: {}\n", support.describe());
    let _ = writeln!(
        out,
        "Seccomp: {}",
        if cfg!(any(target_arch = "x86_64", target_arch = "aarch64")) {
            "UDP, Unix sockets and (for read-only calls) metadata changes refused by a filter"
        } else {
            "no filter for this architecture: UDP and Unix sockets are not closed"
        }
    );
    let _ = writeln!(
        out,
        "Masks: {}",
        match crate::sys::masks::support() {
            Ok(()) => "paths of file deny rules are masked in a mount namespace".to_string(),
            Err(why) => format!("not available: {why}"),
        }
    );
    let denials = permissions.file_denials();
    if !config.enabled {
        out.push_str("Settings: sandbox.enabled is false, so Bash runs unconfined.\n");
        return Ok(out);
    }
    // Each call gets its own file recording where its shell ended up; shown apart.
    let cwd_file = std::env::temp_dir().join("ouro-cwd-probe");
    for (label, confinement) in [
        ("Auto-allowed (read-only) calls", Confinement::ReadOnly),
        ("Approved calls (a rule or your yes)", Confinement::Approved),
        (
            "Calls auto mode's reviewer approved (protected paths stay read-only)",
            Confinement::Reviewed,
        ),
        ("bypassPermissions", Confinement::Unconfined),
    ] {
        let plan = config.plan(confinement, &root, "", &cwd_file, &denials);
        let _ = writeln!(out, "\n{label}:");
        match &plan.policy {
            Some(policy) => {
                describe(&mut out, policy, &cwd_file);
                if let Some(tmp) = &plan.tmpdir {
                    let _ = writeln!(out, "  TMPDIR:  {}", tmp.display());
                }
                match spawn_cost(policy, PROBES).await {
                    Ok(Some((plain, confined))) => {
                        let _ = writeln!(
                            out,
                            "  cost:    starting `true` takes {:.2} ms confined, {:.2} ms not \
                             (median of {PROBES}): the sandbox adds {:.2} ms",
                            ms(confined),
                            ms(plain),
                            ms(confined.saturating_sub(plain))
                        );
                    }
                    Ok(None) => out.push_str("  probe:   the kernel enforces nothing\n"),
                    Err(e) => {
                        let _ = writeln!(out, "  probe:   FAILED: {e}");
                    }
                }
            }
            None => out.push_str("  unconfined\n"),
        }
    }
    if !config.excluded_commands.is_empty() {
        let _ = writeln!(
            out,
            "\nExcluded once approved: {}",
            config.excluded_commands.join(", ")
        );
    }
    Ok(out)
}

fn describe(out: &mut String, policy: &Policy, cwd_file: &Path) {
    let list = |paths: &[PathBuf]| {
        let shown: Vec<String> = paths
            .iter()
            .filter(|p| *p != cwd_file)
            .map(|p| p.display().to_string())
            .collect();
        if shown.is_empty() {
            "nothing".to_string()
        } else {
            shown.join(" ")
        }
    };
    let _ = writeln!(out, "  read:    {}", list(&policy.read));
    let _ = writeln!(
        out,
        "  write:   {} (and the call's own cwd record in the temp dir)",
        list(&policy.write)
    );
    let _ = writeln!(out, "  devices: {}", list(&policy.devices));
    if policy.frozen {
        out.push_str(
            "  metadata: no file's mode, owner, times or attributes may change (seccomp)\n",
        );
    } else if policy.masks.writable_only.is_some() {
        out.push_str(
            "  metadata: changes only in the writable paths (the rest is mounted read-only)\n",
        );
    }
    if !policy.masks.hide.is_empty() || !policy.masks.freeze.is_empty() {
        let _ = writeln!(
            out,
            "  hidden:  {} (deny rules on reading)",
            list(&policy.masks.hide)
        );
        let _ = writeln!(
            out,
            "  frozen:  {} (read-only: deny rules on editing, and protected paths for reviewed calls)",
            list(&policy.masks.freeze)
        );
    }
    let _ = writeln!(
        out,
        "  network: {}",
        if policy.network {
            "allowed"
        } else {
            "TCP connect and bind refused"
        }
    );
}
