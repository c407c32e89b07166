//! Which OS sandbox a Bash call runs in. The permission phase says how the call was allowed
//! ([`Confinement`]); this turns that and the session's `sandbox` settings into the paths and
//! network the kernel will let the command use.

use std::path::{Path, PathBuf};
use std::sync::{Arc, OnceLock};

use crate::permissions::{AddedDirs, Confinement, FileDenials, paths};
use crate::settings::SandboxSettings;
use crate::sys::masks::Masks;
use crate::sys::sandbox::Policy;

/// Where the system's programs, libraries and configuration live: readable by every call.
const SYSTEM_READ: &[&str] = &[
    "/usr", "/bin", "/sbin", "/lib", "/lib32", "/lib64", "/libx32", "/etc", "/opt",
];

/// Character devices every shell may read and write: writing to them changes no file.
const DEVICES: &[&str] = &[
    "/dev/null",
    "/dev/zero",
    "/dev/full",
    "/dev/random",
    "/dev/urandom",
    "/dev/tty",
];

/// The session's sandbox settings, resolved to absolute paths.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct SandboxConfig {
    /// `false` (settings `sandbox.enabled: false`) runs every call unconfined.
    pub enabled: bool,
    /// Whether approved calls may use TCP (settings `sandbox.network`).
    pub network: bool,
    /// The permission engine's added directories: readable by every call, writable by approved
    /// ones.
    pub additional_dirs: AddedDirs,
    /// Extra readable paths for every call (settings `sandbox.readablePaths`).
    pub readable: Vec<PathBuf>,
    /// Extra writable paths for approved calls (settings `sandbox.writablePaths`).
    pub writable: Vec<PathBuf>,
    /// Commands that, once approved, run outside the sandbox (settings
    /// `sandbox.excludedCommands`, matched against the first words of one plain command).
    pub excluded_commands: Vec<String>,
    /// The session's private temp dir for approved calls (`TMPDIR`); removed with the session.
    pub tmpdir: Option<Arc<PrivateTmp>>,
}

/// A temp dir only its owner can enter, removed when the last session holding it ends.
#[derive(Debug, PartialEq, Eq)]
pub struct PrivateTmp {
    dir: PathBuf,
    /// Made on first use: a session that never runs an approved command creates nothing.
    made: std::sync::OnceLock<bool>,
}

impl PrivateTmp {
    /// Names the folder; it is created when a command first needs it.
    pub fn create() -> std::io::Result<PrivateTmp> {
        Ok(PrivateTmp {
            dir: crate::sys::keeper::scratch("tmp"),
            made: std::sync::OnceLock::new(),
        })
    }

    pub fn path(&self) -> &Path {
        self.made.get_or_init(|| {
            use std::os::unix::fs::DirBuilderExt;
            match std::fs::DirBuilder::new().mode(0o700).create(&self.dir) {
                Ok(()) => true,
                Err(e) => {
                    tracing::warn!("approved commands get no private temp dir: {e}");
                    false
                }
            }
        });
        &self.dir
    }
}

impl Drop for PrivateTmp {
    fn drop(&mut self) {
        if self.made.get() == Some(&true) {
            let _ = std::fs::remove_dir_all(&self.dir);
        }
    }
}

impl Default for SandboxConfig {
    fn default() -> Self {
        SandboxConfig {
            enabled: true,
            network: true,
            additional_dirs: AddedDirs::default(),
            readable: Vec::new(),
            writable: Vec::new(),
            excluded_commands: Vec::new(),
            tmpdir: None,
        }
    }
}

/// The sandbox of one call, or `None` when it runs unconfined.
pub struct Plan {
    pub policy: Option<Policy>,
    /// The private temp dir an approved call gets as `TMPDIR`.
    pub tmpdir: Option<PathBuf>,
    /// Why the call must not run: deny rules the sandbox cannot back for it.
    pub refused: Option<String>,
}

impl Plan {
    fn unconfined() -> Plan {
        Plan {
            policy: None,
            tmpdir: None,
            refused: None,
        }
    }

    fn refused(why: String) -> Plan {
        Plan {
            refused: Some(why),
            ..Plan::unconfined()
        }
    }

    /// No sandbox but the masks of the deny rules (bypass mode, excluded commands).
    fn masks_only(masks: Masks, project_root: &Path) -> Plan {
        if masks.is_empty() {
            return Plan::unconfined();
        }
        let masks = Masks {
            keep_visible: vec![project_root.to_path_buf()],
            ..masks
        };
        Plan {
            policy: Some(Policy {
                read: vec![PathBuf::from("/")],
                write: vec![PathBuf::from("/")],
                devices: Vec::new(),
                network: true,
                frozen: false,
                isolated: false,
                masks,
            }),
            ..Plan::unconfined()
        }
    }
}

impl SandboxConfig {
    /// The `sandbox` settings with `~` and relative paths resolved (relative to the project).
    pub fn from_settings(
        settings: &SandboxSettings,
        project_root: &Path,
        additional_dirs: AddedDirs,
    ) -> Self {
        let home = dirs::home_dir();
        let resolve = |text: &String| {
            let path =
                paths::expand_home(text, home.as_deref()).unwrap_or_else(|| PathBuf::from(text));
            paths::lexical(project_root, &path)
        };
        SandboxConfig {
            enabled: settings.enabled.unwrap_or(true),
            network: settings.network.unwrap_or(true),
            additional_dirs,
            readable: settings.readable_paths.iter().map(resolve).collect(),
            writable: settings.writable_paths.iter().map(resolve).collect(),
            excluded_commands: settings.excluded_commands.clone(),
            tmpdir: match PrivateTmp::create() {
                Ok(dir) => Some(Arc::new(dir)),
                Err(e) => {
                    tracing::warn!("approved commands get no private temp dir: {e}");
                    None
                }
            },
        }
    }

    /// `cwd_file` is where the shell records its final directory: writable by every call.
    /// The paths `denials` catch are masked in every mode the sandbox runs in, bypass
    /// included.
    pub fn plan(
        &self,
        confinement: Confinement,
        project_root: &Path,
        command: &str,
        cwd_file: &Path,
        denials: &FileDenials,
    ) -> Plan {
        if !self.enabled {
            warn_once(
                &DISABLED_WARNING,
                "ouro: warning: sandbox.enabled is false in the settings, so Bash commands run \
                 without the OS sandbox",
            );
            return Plan::unconfined();
        }
        let masks = match masks_for(denials) {
            Ok(masks) => masks,
            Err(why) => return Plan::refused(why),
        };
        let devices = DEVICES.iter().map(PathBuf::from).collect();
        match confinement {
            Confinement::Unconfined => {
                warn_once(
                    &BYPASS_WARNING,
                    "ouro: warning: bypassPermissions: Bash commands run without the OS sandbox \
                     (the paths of file deny rules stay masked)",
                );
                Plan::masks_only(masks, project_root)
            }
            Confinement::Approved if self.is_excluded(command) => {
                Plan::masks_only(masks, project_root)
            }
            Confinement::ReadOnly => {
                let mut read: Vec<PathBuf> = SYSTEM_READ.iter().map(PathBuf::from).collect();
                read.push(project_root.to_path_buf());
                read.extend(self.additional_dirs.list());
                read.extend(self.readable.iter().cloned());
                Plan {
                    policy: Some(Policy {
                        read,
                        write: vec![cwd_file.to_path_buf()],
                        devices,
                        network: false,
                        frozen: true,
                        isolated: true,
                        masks: Masks {
                            keep_visible: vec![project_root.to_path_buf()],
                            ..masks
                        },
                    }),
                    tmpdir: None,
                    refused: None,
                }
            }
            Confinement::Approved | Confinement::Reviewed => {
                let mut masks = masks;
                if confinement == Confinement::Reviewed {
                    masks.freeze.extend(reviewed_freeze(project_root));
                }
                let tmpdir = self.tmpdir.as_ref().map(|t| t.path().to_path_buf());
                let mut write = vec![project_root.to_path_buf(), cwd_file.to_path_buf()];
                write.extend(self.additional_dirs.list());
                write.extend(self.writable.iter().cloned());
                write.extend(tmpdir.clone());
                // Where the kernel lets ouro mount, the rest is read-only: Landlock stops
                // writes there, not changes of mode, owner or times.
                let writable_only = crate::sys::masks::support().is_ok().then(|| write.clone());
                Plan {
                    policy: Some(Policy {
                        read: vec![PathBuf::from("/")],
                        write,
                        devices,
                        network: self.network,
                        frozen: false,
                        isolated: true,
                        masks: Masks {
                            writable_only,
                            keep_visible: vec![project_root.to_path_buf()],
                            ..masks
                        },
                    }),
                    tmpdir,
                    refused: None,
                }
            }
        }
    }

    /// Only one plain command whose first words are an excluded entry's words leaves the
    /// sandbox: `docker ps; rm -rf ~` or `docker ps $(...)` stays confined.
    fn is_excluded(&self, command: &str) -> bool {
        if self.excluded_commands.is_empty() {
            return false;
        }
        let analysis = crate::permissions::bash::analyse(command);
        let [part] = analysis.parts.as_slice() else {
            return false;
        };
        if !analysis.findings.is_empty() || !part.assignments.is_empty() {
            return false;
        }
        let words: Vec<&str> = part
            .core_words()
            .iter()
            .map(|w| if w.literal { w.text.as_str() } else { "" })
            .collect();
        self.excluded_commands.iter().any(|excluded| {
            let wanted: Vec<&str> = excluded.split_whitespace().collect();
            !wanted.is_empty() && words.starts_with(&wanted)
        })
    }
}

/// What a call approved only by auto mode's reviewer finds read-only: the project's protected
/// paths, where the kernel lets ouro mount (else the analyser and the check after the call
/// are what stand, and the user is told once).
fn reviewed_freeze(project_root: &Path) -> Vec<PathBuf> {
    static UNSUPPORTED: OnceLock<()> = OnceLock::new();
    if let Err(why) = crate::sys::masks::support() {
        warn_once(
            &UNSUPPORTED,
            &format!(
                "ouro: warning: calls auto mode's reviewer approves cannot get the project's                  protected files read-only: {why}. Protected files they create are still removed                  after the call."
            ),
        );
        return Vec::new();
    }
    crate::permissions::protected_in_project(project_root)
}

/// The paths the deny rules catch now; `Err` (the command must not run) when they cannot
/// all be found. When the kernel cannot mask, the rules still hold for ouro's own tools and
/// the analyser, and the user is told once that the sandbox does not back them.
fn masks_for(denials: &FileDenials) -> Result<Masks, String> {
    static UNSUPPORTED: OnceLock<()> = OnceLock::new();
    if denials.is_empty() {
        return Ok(Masks::default());
    }
    let masks = denials.find().map_err(|e| {
        format!("The command was not run: {e}. The sandbox enforces file deny rules, so it must find their paths first.")
    })?;
    if masks.is_empty() {
        return Ok(masks);
    }
    if let Err(why) = crate::sys::masks::support() {
        warn_once(
            &UNSUPPORTED,
            &format!(
                "ouro: warning: file deny rules are not enforced by the OS sandbox for Bash \
                 commands: {why}. ouro's own tools and the command analyser still enforce them."
            ),
        );
        return Ok(Masks::default());
    }
    Ok(masks)
}

static DISABLED_WARNING: OnceLock<()> = OnceLock::new();
static BYPASS_WARNING: OnceLock<()> = OnceLock::new();

/// Plans made only to be shown (`ouro sandbox check`) warn about nothing: the report says it.
pub fn quiet_warnings() {
    let _ = DISABLED_WARNING.set(());
    let _ = BYPASS_WARNING.set(());
}

/// Said once per process, on stderr, so it is seen without flooding.
fn warn_once(flag: &OnceLock<()>, text: &str) {
    if flag.set(()).is_ok() {
        eprintln!("{text}");
    }
}

/// Said when the kernel cannot enforce the sandbox.
pub(super) fn warn_unsupported(why: &str) {
    static UNSUPPORTED: OnceLock<()> = OnceLock::new();
    warn_once(
        &UNSUPPORTED,
        &format!("ouro: warning: Bash commands run without the OS sandbox: {why}"),
    );
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn read_only_calls_write_nothing_but_their_cwd_file_and_have_no_network() {
        let config = SandboxConfig::default();
        let plan = config.plan(
            Confinement::ReadOnly,
            Path::new("/p"),
            "ls",
            Path::new("/tmp/cwd"),
            &FileDenials::default(),
        );
        let policy = plan.policy.unwrap();
        assert_eq!(policy.write, vec![PathBuf::from("/tmp/cwd")]);
        assert!(!policy.network);
        assert!(policy.read.contains(&PathBuf::from("/p")));
        assert!(!policy.read.contains(&PathBuf::from("/")));
        assert!(plan.tmpdir.is_none());
    }

    #[test]
    fn approved_calls_write_in_the_project_and_follow_the_network_setting() {
        let config = SandboxConfig {
            network: false,
            writable: vec![PathBuf::from("/cache")],
            ..SandboxConfig::default()
        };
        let plan = config.plan(
            Confinement::Approved,
            Path::new("/p"),
            "make",
            Path::new("/tmp/cwd"),
            &FileDenials::default(),
        );
        let policy = plan.policy.unwrap();
        assert!(policy.write.contains(&PathBuf::from("/p")));
        assert!(policy.write.contains(&PathBuf::from("/cache")));
        assert!(!policy.network);
        assert_eq!(policy.read, vec![PathBuf::from("/")]);
    }

    #[test]
    fn excluded_commands_run_unconfined_only_once_approved() {
        let config = SandboxConfig {
            excluded_commands: vec!["docker".into()],
            ..SandboxConfig::default()
        };
        let cwd = Path::new("/tmp/cwd");
        let root = Path::new("/p");
        let none = FileDenials::default();
        assert!(
            config
                .plan(Confinement::Approved, root, "docker ps", cwd, &none)
                .policy
                .is_none()
        );
        assert!(
            config
                .plan(Confinement::ReadOnly, root, "docker ps", cwd, &none)
                .policy
                .is_some()
        );
        for confined in [
            "dockerd",
            "docker ps; touch x",
            "docker ps $(id)",
            "X=1 docker ps",
        ] {
            assert!(
                config
                    .plan(Confinement::Approved, root, confined, cwd, &none)
                    .policy
                    .is_some(),
                "{confined}"
            );
        }
        let off = SandboxConfig {
            enabled: false,
            ..SandboxConfig::default()
        };
        assert!(
            off.plan(Confinement::ReadOnly, root, "ls", cwd, &none)
                .policy
                .is_none()
        );
    }
}
