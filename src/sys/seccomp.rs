//! What Landlock does not cover, closed with a seccomp filter: the network half of "no
//! network", and (for read-only calls) changes to file metadata anywhere.
//!
//! The network half of "no network" that Landlock does not cover. Landlock's network rules
//! know TCP only, so a command without network could still send UDP (DNS exfiltration) or
//! reach a Unix socket outside the project. A seccomp filter closes that: creating an IPv4,
//! IPv6, packet or Unix socket fails with EACCES. `socketpair` (an anonymous pair, no address)
//! stays allowed, so pipes-like uses of sockets inside the command still work.

/// `struct seccomp_data` offsets: the system call number, the architecture, the first argument.
const NR: u32 = 0;
const ARCH: u32 = 4;
const ARG0: u32 = 16;

#[cfg(target_arch = "x86_64")]
const AUDIT_ARCH: u32 = 0xC000_003E;
#[cfg(target_arch = "aarch64")]
const AUDIT_ARCH: u32 = 0xC000_00B7;

/// x32 system calls on x86_64 carry this bit; they are refused rather than judged.
const X32_BIT: u32 = 0x4000_0000;

const RET_ALLOW: u32 = 0x7fff_0000;
const RET_ERRNO: u32 = 0x0005_0000;

fn statement(code: u32, k: u32) -> libc::sock_filter {
    libc::sock_filter {
        code: code as u16,
        jt: 0,
        jf: 0,
        k,
    }
}

fn jump(code: u32, k: u32, jt: u8, jf: u8) -> libc::sock_filter {
    libc::sock_filter {
        code: code as u16,
        jt,
        jf,
        k,
    }
}

/// System calls that change a file's mode, owner, times or extended attributes. Landlock
/// does not cover them, so a read-only call could otherwise `chmod`, `touch -d` or `setfattr`
/// files anywhere it can reach.
const METADATA_CALLS: &[libc::c_long] = &[
    libc::SYS_fchmod,
    libc::SYS_fchmodat,
    libc::SYS_fchown,
    libc::SYS_fchownat,
    libc::SYS_utimensat,
    libc::SYS_setxattr,
    libc::SYS_lsetxattr,
    libc::SYS_fsetxattr,
    libc::SYS_removexattr,
    libc::SYS_lremovexattr,
    libc::SYS_fremovexattr,
];

/// The older calls of the same kind that x86_64 still has.
#[cfg(target_arch = "x86_64")]
const LEGACY_METADATA_CALLS: &[libc::c_long] = &[
    libc::SYS_chmod,
    libc::SYS_fchmodat2,
    libc::SYS_chown,
    libc::SYS_lchown,
    libc::SYS_utime,
    libc::SYS_utimes,
    libc::SYS_futimesat,
];
#[cfg(not(target_arch = "x86_64"))]
const LEGACY_METADATA_CALLS: &[libc::c_long] = &[];

/// [`no_network`], and every metadata change refused with EPERM: for calls allowed only as
/// read-only.
#[cfg(any(target_arch = "x86_64", target_arch = "aarch64"))]
pub fn read_only() -> Vec<libc::sock_filter> {
    build(&[METADATA_CALLS, LEGACY_METADATA_CALLS].concat())
}

/// The filter: `socket()` of a network or Unix domain fails with EACCES; everything else is
/// allowed. A foreign architecture's system calls fail with EPERM.
#[cfg(any(target_arch = "x86_64", target_arch = "aarch64"))]
pub fn no_network() -> Vec<libc::sock_filter> {
    build(&[])
}

/// The filter for sockets, and for `refused` calls (EPERM).
#[cfg(any(target_arch = "x86_64", target_arch = "aarch64"))]
fn build(refused: &[libc::c_long]) -> Vec<libc::sock_filter> {
    let load = libc::BPF_LD | libc::BPF_W | libc::BPF_ABS;
    let eq = libc::BPF_JMP | libc::BPF_JEQ | libc::BPF_K;
    let ge = libc::BPF_JMP | libc::BPF_JGE | libc::BPF_K;
    let ret = libc::BPF_RET | libc::BPF_K;
    let denied = [
        libc::AF_INET,
        libc::AF_INET6,
        libc::AF_UNIX,
        libc::AF_PACKET,
    ];
    let mut program = vec![
        statement(load, ARCH),
        jump(eq, AUDIT_ARCH, 1, 0),
        statement(ret, RET_ERRNO | libc::EPERM as u32),
        statement(load, NR),
        jump(ge, X32_BIT, 0, 1),
        statement(ret, RET_ERRNO | libc::EPERM as u32),
    ];
    for call in refused {
        program.push(jump(eq, *call as u32, 0, 1));
        program.push(statement(ret, RET_ERRNO | libc::EPERM as u32));
    }
    program.extend([
        jump(eq, libc::SYS_socket as u32, 1, 0),
        statement(ret, RET_ALLOW),
        statement(load, ARG0),
    ]);
    // Each domain test jumps to the final EACCES when it matches.
    let tests = denied.len();
    for (i, domain) in denied.iter().enumerate() {
        let to_deny = u8::try_from(tests - i).unwrap_or(u8::MAX);
        program.push(jump(eq, *domain as u32, to_deny, 0));
    }
    program.push(statement(ret, RET_ALLOW));
    program.push(statement(ret, RET_ERRNO | libc::EACCES as u32));
    program
}

#[cfg(not(any(target_arch = "x86_64", target_arch = "aarch64")))]
pub fn no_network() -> Vec<libc::sock_filter> {
    Vec::new()
}

#[cfg(not(any(target_arch = "x86_64", target_arch = "aarch64")))]
pub fn read_only() -> Vec<libc::sock_filter> {
    Vec::new()
}

/// Installs `filter` on the calling thread (no_new_privs must be set, as Landlock sets it).
///
/// # Safety
/// Async-signal-safe: meant for a forked child before exec; it only makes one system call on
/// memory prepared before the fork.
pub unsafe fn install(filter: &[libc::sock_filter]) -> std::io::Result<()> {
    if filter.is_empty() {
        return Ok(());
    }
    let program = libc::sock_fprog {
        len: u16::try_from(filter.len()).unwrap_or(u16::MAX),
        filter: filter.as_ptr().cast_mut(),
    };
    // SAFETY: `program` points at `filter`, alive for the call; the kernel copies it.
    let done = unsafe {
        libc::prctl(
            libc::PR_SET_SECCOMP,
            libc::SECCOMP_MODE_FILTER,
            &program as *const libc::sock_fprog,
        )
    };
    if done == 0 {
        Ok(())
    } else {
        Err(std::io::Error::last_os_error())
    }
}
