//! What Landlock does not cover, closed with a seccomp filter: the network half of "no
//! network", and (for read-only calls) changes to file metadata anywhere.
//!
//! The network half of "no network" that Landlock does not cover. Landlock's network rules
//! know TCP only, so a command without network could still send UDP (DNS exfiltration), reach
//! a Unix socket outside the project or the VM's host over vsock. A seccomp filter closes that:
//! creating a socket fails with EACCES, of any family but the kernel's own local ones
//! (netlink, which `getifaddrs` and `ip` read through, and the crypto API) for a call the user
//! approved, and of every family for a read-only call. `socketpair` (an anonymous pair, no
//! address) stays allowed, so pipes-like uses of sockets inside the command still work.

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

/// No socket of any family, and every metadata change refused with EPERM: for calls allowed
/// only as read-only.
#[cfg(any(target_arch = "x86_64", target_arch = "aarch64"))]
pub fn read_only() -> Vec<libc::sock_filter> {
    build(&[METADATA_CALLS, LEGACY_METADATA_CALLS].concat(), &[])
}

/// The filter: `socket()` of any family but netlink and the crypto API fails with EACCES;
/// everything else is allowed. A foreign architecture's system calls fail with EPERM.
#[cfg(any(target_arch = "x86_64", target_arch = "aarch64"))]
pub fn no_network() -> Vec<libc::sock_filter> {
    build(&[], &[libc::AF_NETLINK, libc::AF_ALG])
}

/// The filter for sockets (only the `local` families), and for `refused` calls (EPERM).
#[cfg(any(target_arch = "x86_64", target_arch = "aarch64"))]
fn build(refused: &[libc::c_long], local: &[libc::c_int]) -> Vec<libc::sock_filter> {
    let load = libc::BPF_LD | libc::BPF_W | libc::BPF_ABS;
    let eq = libc::BPF_JMP | libc::BPF_JEQ | libc::BPF_K;
    let ge = libc::BPF_JMP | libc::BPF_JGE | libc::BPF_K;
    let ret = libc::BPF_RET | libc::BPF_K;
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
    // Each domain test jumps to the final ALLOW when it matches.
    let tests = local.len();
    for (i, domain) in local.iter().enumerate() {
        let to_allow = u8::try_from(tests - i).unwrap_or(u8::MAX);
        program.push(jump(eq, *domain as u32, to_allow, 0));
    }
    program.push(statement(ret, RET_ERRNO | libc::EACCES as u32));
    program.push(statement(ret, RET_ALLOW));
    program
}

/// Takes every capability away from the calling process and whatever it runs: a read-only
/// call run by root must not set the clock, the host name or the network's addresses, which
/// no file rule covers. The bounding set goes first (dropping it needs CAP_SETPCAP); a
/// program root then runs gains nothing from it. Without the right to drop (not root), there
/// was nothing to drop.
///
/// # Safety
/// Async-signal-safe: meant for a forked child before exec; it only makes system calls on
/// stack memory.
pub unsafe fn drop_capabilities() -> std::io::Result<()> {
    const LINUX_CAPABILITY_VERSION_3: u32 = 0x2008_0522;
    #[repr(C)]
    struct Header {
        version: u32,
        pid: libc::c_int,
    }
    #[repr(C)]
    #[derive(Clone, Copy)]
    struct Data {
        effective: u32,
        permitted: u32,
        inheritable: u32,
    }
    // SAFETY: prctl with integer arguments; a capability the kernel does not know is EINVAL.
    unsafe {
        for cap in 0..64 {
            libc::prctl(libc::PR_CAPBSET_DROP, cap, 0, 0, 0);
        }
        libc::prctl(
            libc::PR_CAP_AMBIENT,
            libc::PR_CAP_AMBIENT_CLEAR_ALL,
            0,
            0,
            0,
        );
    }
    let mut header = Header {
        version: LINUX_CAPABILITY_VERSION_3,
        pid: 0,
    };
    let data = [Data {
        effective: 0,
        permitted: 0,
        inheritable: 0,
    }; 2];
    // SAFETY: capset reads a version-3 header and two data records, both alive for the call.
    let done =
        unsafe { libc::syscall(libc::SYS_capset, &mut header as *mut Header, data.as_ptr()) };
    if done == 0 {
        Ok(())
    } else {
        Err(std::io::Error::last_os_error())
    }
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
