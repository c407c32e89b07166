//! What ouro and its keeper say to each other over their socket: a request to start a process
//! (with the descriptors of its stdio) and the replies about it. Each message is a length
//! prefix (`sys::frame`) and that many bytes of JSON; a request's descriptors travel as
//! `SCM_RIGHTS` with its length, so they arrive with the message they belong to.

use std::ffi::OsString;
use std::io::{Read, Write};
use std::os::fd::{AsRawFd, FromRawFd, OwnedFd, RawFd};
use std::os::unix::net::UnixStream;

use serde::{Deserialize, Serialize};

use crate::sys::frame;
use crate::sys::sandbox::Policy;

/// The most descriptors one message carries (stdin, stdout, stderr).
const MAX_FDS: usize = 3;

/// The largest message either side accepts: a command line and an environment, with room.
const MAX_MESSAGE: u32 = 256 * 1024 * 1024;

/// Start one process. Its stdin is the first descriptor sent when `stdin` is set (else
/// `/dev/null`); stdout and stderr are the next two.
#[derive(Debug, Serialize, Deserialize)]
pub struct Request {
    pub id: u64,
    pub program: OsString,
    pub args: Vec<OsString>,
    pub cwd: OsString,
    /// The whole environment of the process (nothing is inherited from the keeper).
    pub env: Vec<(OsString, OsString)>,
    pub stdin: bool,
    /// The OS sandbox it starts in.
    pub policy: Option<Policy>,
    /// Its stdio is a terminal that becomes its controlling terminal, in a session of its own
    /// (a brain's terminal UI), instead of pipes in a process group of its own.
    #[serde(default)]
    pub terminal: bool,
}

#[derive(Debug, Serialize, Deserialize)]
pub(super) enum Reply {
    Started {
        id: u64,
        pid: i32,
    },
    /// Not started; `sandbox` when the sandbox could not be built for it.
    Failed {
        id: u64,
        sandbox: bool,
        message: String,
    },
    /// The process ended with this wait status.
    Exited {
        id: u64,
        status: i32,
    },
}

pub(super) fn send<T: Serialize>(
    socket: &UnixStream,
    message: &T,
    fds: &[RawFd],
) -> std::io::Result<()> {
    let body = serde_json::to_vec(message)?;
    let length = frame::encode(body.len(), MAX_MESSAGE).map_err(|e| {
        std::io::Error::new(
            std::io::ErrorKind::InvalidData,
            format!("a message for the keeper of {e}"),
        )
    })?;
    send_with_fds(socket, &length, fds)?;
    (&*socket).write_all(&body)
}

/// The next message and its descriptors; `None` when the other side has closed the socket.
pub(super) fn recv<T: for<'de> Deserialize<'de>>(
    socket: &UnixStream,
) -> std::io::Result<Option<(T, Vec<OwnedFd>)>> {
    let mut length = [0u8; frame::PREFIX];
    let (got, fds) = recv_with_fds(socket, &mut length)?;
    if got == 0 {
        return Ok(None);
    }
    (&*socket).read_exact(&mut length[got..])?;
    let length = frame::decode(length, MAX_MESSAGE)
        .map_err(|e| std::io::Error::other(format!("a keeper message of {e}")))?;
    let mut body = vec![0u8; length as usize];
    (&*socket).read_exact(&mut body)?;
    Ok(Some((serde_json::from_slice(&body)?, fds)))
}

fn cmsg_space() -> usize {
    // SAFETY: CMSG_SPACE only computes a size.
    unsafe { libc::CMSG_SPACE((MAX_FDS * std::mem::size_of::<RawFd>()) as u32) as usize }
}

fn send_with_fds(socket: &UnixStream, bytes: &[u8], fds: &[RawFd]) -> std::io::Result<()> {
    if fds.len() > MAX_FDS {
        return Err(std::io::Error::other(
            "too many descriptors for one message",
        ));
    }
    let mut control = vec![0u8; cmsg_space()];
    let mut iov = libc::iovec {
        iov_base: bytes.as_ptr() as *mut libc::c_void,
        iov_len: bytes.len(),
    };
    // SAFETY: msghdr is plain data; every pointer in it refers to a live local buffer, and the
    // control message is written within `control`, which CMSG_SPACE sized for MAX_FDS.
    let sent = unsafe {
        let mut header: libc::msghdr = std::mem::zeroed();
        header.msg_iov = &mut iov;
        header.msg_iovlen = 1;
        if !fds.is_empty() {
            let data = std::mem::size_of_val(fds);
            header.msg_control = control.as_mut_ptr().cast();
            header.msg_controllen = libc::CMSG_SPACE(data as u32) as _;
            let cmsg = libc::CMSG_FIRSTHDR(&header);
            (*cmsg).cmsg_level = libc::SOL_SOCKET;
            (*cmsg).cmsg_type = libc::SCM_RIGHTS;
            (*cmsg).cmsg_len = libc::CMSG_LEN(data as u32) as _;
            std::ptr::copy_nonoverlapping(fds.as_ptr(), libc::CMSG_DATA(cmsg).cast(), fds.len());
        }
        libc::sendmsg(socket.as_raw_fd(), &header, libc::MSG_NOSIGNAL)
    };
    if sent < 0 {
        return Err(std::io::Error::last_os_error());
    }
    let sent = sent as usize;
    (&*socket).write_all(&bytes[sent..])
}

fn recv_with_fds(socket: &UnixStream, buf: &mut [u8]) -> std::io::Result<(usize, Vec<OwnedFd>)> {
    let mut control = vec![0u8; cmsg_space()];
    let mut iov = libc::iovec {
        iov_base: buf.as_mut_ptr().cast(),
        iov_len: buf.len(),
    };
    let mut fds = Vec::new();
    // SAFETY: as in send_with_fds; the kernel writes at most msg_controllen bytes of control
    // data, and each descriptor it passed is taken into an OwnedFd exactly once.
    unsafe {
        let mut header: libc::msghdr = std::mem::zeroed();
        header.msg_iov = &mut iov;
        header.msg_iovlen = 1;
        header.msg_control = control.as_mut_ptr().cast();
        header.msg_controllen = control.len() as _;
        let got = loop {
            let got = libc::recvmsg(socket.as_raw_fd(), &mut header, libc::MSG_CMSG_CLOEXEC);
            if got >= 0 {
                break got as usize;
            }
            let error = std::io::Error::last_os_error();
            if error.kind() != std::io::ErrorKind::Interrupted {
                return Err(error);
            }
        };
        let mut cmsg = libc::CMSG_FIRSTHDR(&header);
        while !cmsg.is_null() {
            if (*cmsg).cmsg_level == libc::SOL_SOCKET && (*cmsg).cmsg_type == libc::SCM_RIGHTS {
                let data = (*cmsg).cmsg_len as usize - libc::CMSG_LEN(0) as usize;
                let count = data / std::mem::size_of::<RawFd>();
                let first = libc::CMSG_DATA(cmsg).cast::<RawFd>();
                for i in 0..count {
                    fds.push(OwnedFd::from_raw_fd(first.add(i).read_unaligned()));
                }
            }
            cmsg = libc::CMSG_NXTHDR(&header, cmsg);
        }
        Ok((got, fds))
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn a_message_and_its_descriptors_arrive_together() {
        let (a, b) = UnixStream::pair().unwrap();
        let (reader, writer) = std::io::pipe().unwrap();
        let request = Request {
            id: 7,
            program: "bash".into(),
            args: vec!["-c".into(), "x".repeat(300_000).into()],
            cwd: "/".into(),
            env: vec![("A".into(), "b".into())],
            stdin: false,
            policy: None,
            terminal: false,
        };
        let sending = std::thread::spawn(move || send(&a, &request, &[writer.as_raw_fd()]));
        let (got, fds): (Request, _) = recv(&b).unwrap().unwrap();
        sending.join().unwrap().unwrap();
        assert_eq!((got.id, got.args[1].len(), fds.len()), (7, 300_000, 1));
        let mut pipe = std::fs::File::from(fds.into_iter().next().unwrap());
        pipe.write_all(b"through").unwrap();
        drop(pipe);
        let mut text = String::new();
        (&reader).read_to_string(&mut text).unwrap();
        assert_eq!(text, "through");
        drop(b);
    }
}
