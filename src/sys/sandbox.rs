//! The OS sandbox a shell command runs in (Linux Landlock). The permission engine decides what
//! needs approval; this is the wall behind it: whatever a confined command tries, the kernel
//! refuses writes, reads and connections outside its [`Policy`].
//!
//! The ruleset is built in the parent (it opens the allowed paths), and the child only calls
//! `prctl(PR_SET_NO_NEW_PRIVS)` and `landlock_restrict_self` between fork and exec.

use std::path::{Path, PathBuf};

use landlock::{
    ABI, Access, AccessFs, AccessNet, CompatLevel, Compatible, PathBeneath, PathFd, Ruleset,
    RulesetAttr, RulesetCreated, RulesetCreatedAttr, Scope,
};

/// The newest Landlock ABI ouro asks for; the crate drops what the kernel lacks.
const ABI_WANTED: ABI = ABI::V6;

/// What a confined command may touch.
#[derive(Debug, Clone, Default, PartialEq, Eq, serde::Serialize, serde::Deserialize)]
pub struct Policy {
    /// Read (and execute) anything beneath these.
    #[serde(with = "super::os_serde::paths")]
    pub read: Vec<PathBuf>,
    /// Read, write, create and remove anything beneath these (a path may also be one file).
    #[serde(with = "super::os_serde::paths")]
    pub write: Vec<PathBuf>,
    /// Character devices a shell writes to (`/dev/null`, `/dev/tty`): read and write, no more.
    #[serde(with = "super::os_serde::paths")]
    pub devices: Vec<PathBuf>,
    /// Outbound and listening TCP allowed.
    pub network: bool,
    /// No file's mode, owner, times or extended attributes may change, anywhere (a call
    /// allowed only as read-only).
    pub frozen: bool,
    /// Signals and abstract Unix sockets stay inside the sandbox (off only in bypass mode,
    /// where the sandbox is there for `masks` alone).
    pub isolated: bool,
    /// Paths the user's deny rules take away, whatever the rules above grant.
    pub masks: super::masks::Masks,
}

/// What the running kernel offers.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Support {
    /// Landlock with this ABI version.
    Landlock(i32),
    /// Built in but switched off (boot without `lsm=…landlock`).
    Disabled,
    /// Not in this kernel.
    Missing,
}

impl Support {
    /// What the kernel offers; asked once per process (every Bash call needs it).
    pub fn detect() -> Support {
        static SUPPORT: std::sync::OnceLock<Support> = std::sync::OnceLock::new();
        *SUPPORT.get_or_init(Support::query)
    }

    fn query() -> Support {
        // SAFETY: landlock_create_ruleset with a null attribute, size 0 and the VERSION flag
        // only returns the ABI version (or an error); it touches no memory.
        let version = unsafe {
            libc::syscall(
                libc::SYS_landlock_create_ruleset,
                std::ptr::null::<libc::c_void>(),
                0usize,
                1u32,
            )
        };
        if version > 0 {
            return Support::Landlock(i32::try_from(version).unwrap_or(i32::MAX));
        }
        match std::io::Error::last_os_error().raw_os_error() {
            Some(libc::EOPNOTSUPP) => Support::Disabled,
            _ => Support::Missing,
        }
    }

    pub fn describe(self) -> String {
        match self {
            Support::Landlock(abi) => {
                let mut out = format!("Landlock ABI {abi}: file system rules");
                if abi >= 4 {
                    out.push_str(", TCP bind/connect rules");
                }
                if abi >= 6 {
                    out.push_str(", signal and abstract-socket scoping");
                }
                out
            }
            Support::Disabled => {
                "Landlock is built into this kernel but not enabled (add `landlock` to the \
                 kernel's `lsm=` boot parameter)"
                    .into()
            }
            Support::Missing => "this kernel has no Landlock (it needs Linux 5.13 or newer)".into(),
        }
    }
}

#[derive(Debug, thiserror::Error)]
pub enum SandboxError {
    #[error("could not build the sandbox's ruleset: {0}")]
    Ruleset(#[from] landlock::RulesetError),
    #[error("could not run a confined process: {0}")]
    Spawn(std::io::Error),
    #[error(transparent)]
    Masks(#[from] super::masks::MaskError),
}

/// A ruleset ready to be applied to one child process.
pub struct Prepared {
    ruleset: Option<RulesetCreated>,
    masks: Option<super::masks::Prepared>,
    /// Without network: the seccomp filter that closes UDP and Unix sockets (see
    /// [`super::seccomp`]); empty otherwise.
    filter: Vec<libc::sock_filter>,
    /// A read-only call also gives up every capability (see [`super::seccomp::drop_capabilities`]).
    frozen: bool,
}

impl Prepared {
    /// Builds the ruleset for `policy`. Paths that do not exist are left out (they grant
    /// nothing). `None` when the kernel enforces nothing, so the caller can say so.
    pub fn new(policy: &Policy) -> Result<Option<Prepared>, SandboxError> {
        if !matches!(Support::detect(), Support::Landlock(_)) {
            return Ok(None);
        }
        let mut ruleset = Ruleset::default()
            .set_compatibility(CompatLevel::BestEffort)
            .handle_access(AccessFs::from_all(ABI_WANTED))?;
        if !policy.network {
            ruleset = ruleset.handle_access(AccessNet::BindTcp | AccessNet::ConnectTcp)?;
        }
        if policy.isolated {
            ruleset = ruleset.scope(Scope::AbstractUnixSocket | Scope::Signal)?;
        }
        let mut created = ruleset.create()?;
        let read = AccessFs::from_read(ABI_WANTED);
        let all = AccessFs::from_all(ABI_WANTED);
        let device = AccessFs::ReadFile | AccessFs::WriteFile;
        for (paths, access) in [
            (&policy.read, read),
            (&policy.write, all),
            (&policy.devices, device),
        ] {
            for path in paths {
                if let Some(fd) = open_path(path) {
                    // A rule on a file may only carry file rights; the crate narrows them.
                    created = created.add_rule(PathBeneath::new(fd, access))?;
                }
            }
        }
        let masks = super::masks::Prepared::new(&policy.masks)?;
        Ok(Some(Prepared {
            ruleset: Some(created),
            masks: (!masks.is_empty()).then_some(masks),
            filter: if policy.frozen {
                super::seccomp::read_only()
            } else if policy.network {
                Vec::new()
            } else {
                super::seccomp::no_network()
            },
            frozen: policy.frozen,
        }))
    }

    /// Makes `command`'s child confine itself just before it runs the program.
    pub fn apply(mut self, command: &mut std::process::Command) {
        use std::os::unix::process::CommandExt;
        let mut ruleset = self.ruleset.take();
        let masks = self.masks.take();
        let filter = std::mem::take(&mut self.filter);
        let frozen = self.frozen;
        // SAFETY: the closure runs in the forked child before exec. It allocates nothing: it
        // makes system calls (unshare and mount for the masks, prctl, landlock_restrict_self,
        // the seccomp prctl) on masks, a ruleset's file descriptor and a filter that were made
        // in the parent, and reports failure as an io::Error. The masks come first: Landlock
        // then forbids unmounting them, and mounting them needs the capabilities a read-only
        // call gives up next.
        unsafe {
            command.pre_exec(move || {
                if let Some(masks) = &masks {
                    masks.apply_in_child()?;
                }
                if frozen {
                    super::seccomp::drop_capabilities()?;
                }
                if let Some(r) = ruleset.take() {
                    r.restrict_self()
                        .map_err(|_| std::io::Error::from_raw_os_error(libc::EPERM))?;
                }
                super::seccomp::install(&filter)
            });
        }
    }
}

fn open_path(path: &Path) -> Option<PathFd> {
    if !path.exists() {
        return None;
    }
    PathFd::new(path).ok()
}
