//! Keeps ouro's API credentials out of reach of the processes it runs.
//!
//! `/proc/<pid>/environ` shows the environment block a process started with, to every process
//! of the same user and to root, whatever the process did with its variables since. So ouro
//! makes itself non-dumpable (as ssh-agent does: its `/proc` files then belong to root), and
//! moves each credential out of that block: the variable gets a copy on the heap (so ouro and
//! the brains it starts still see it) and the original bytes are zeroed, so even root reading
//! `/proc/<pid>/environ` finds nothing. Tool processes never get the credentials at all (the
//! Bash tool filters secret-looking names from its environment).

use std::ffi::CStr;

/// The variables that hold credentials for the Messages API.
pub const CREDENTIALS: [&str; 2] = ["ANTHROPIC_API_KEY", "ANTHROPIC_AUTH_TOKEN"];

/// Hides the credentials as the module says.
///
/// # Safety
/// Must run before any other thread exists: it changes the environment.
pub unsafe fn hide_credentials() {
    // SAFETY: prctl with PR_SET_DUMPABLE takes plain integers.
    #[cfg(target_os = "linux")]
    unsafe {
        libc::prctl(libc::PR_SET_DUMPABLE, 0, 0, 0, 0);
    }
    for name in CREDENTIALS {
        let Some(value) = std::env::var_os(name) else {
            continue;
        };
        // SAFETY: single-threaded (the caller's promise), and the pointers come from environ.
        unsafe {
            let Some(original) = entry(name) else {
                continue;
            };
            // glibc's setenv stores a new "NAME=value" string and points environ at it.
            std::env::set_var(name, &value);
            if entry(name) == Some(original) {
                continue;
            }
            let bytes = CStr::from_ptr(original).to_bytes().len();
            std::ptr::write_bytes(original, 0, bytes);
        }
    }
}

/// The environ entry `NAME=...`, if there is one.
///
/// # Safety
/// No other thread may change the environment meanwhile.
#[cfg(all(target_os = "linux", target_env = "gnu"))]
unsafe fn entry(name: &str) -> Option<*mut libc::c_char> {
    let prefix = format!("{name}=");
    // SAFETY: environ is a NULL-terminated array of NUL-terminated strings.
    unsafe {
        let mut at = libc::environ;
        while !at.is_null() && !(*at).is_null() {
            if CStr::from_ptr(*at)
                .to_bytes()
                .starts_with(prefix.as_bytes())
            {
                return Some(*at);
            }
            at = at.add(1);
        }
    }
    None
}

#[cfg(not(all(target_os = "linux", target_env = "gnu")))]
unsafe fn entry(_name: &str) -> Option<*mut libc::c_char> {
    None
}
