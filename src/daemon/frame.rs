//! The daemon's wire protocol: length-prefixed frames over its unix socket.
//!
//! A frame is, in order:
//!
//! | bytes | what |
//! |---|---|
//! | 4 | header length (at most [`MAX_HEADER`]), as `sys::frame` prefixes lengths |
//! | 4 | payload length (at most [`MAX_PAYLOAD`]), the same way |
//! | header length | one JSON object, a [`Header`] (`{"type": "talk", ...}`) |
//! | payload length | raw bytes: terminal input and output, stream-json lines, a screen |
//!
//! Terminal bytes ride in the payload, never in JSON, so the relay is binary-safe and costs no
//! encoding. The first frame each way is the handshake: the client's `hello`, the daemon's
//! `welcome` (or `refused`, with a sentence saying what to do). Peers of different protocol
//! versions refuse each other there, before anything else is read.

use std::path::PathBuf;

use serde::{Deserialize, Serialize};
use serde_json::Value;
use tokio::io::{AsyncRead, AsyncReadExt, AsyncWrite, AsyncWriteExt};

use crate::brain::Verb;
pub use crate::brain::parked::PendingQuestion;
use crate::sys::frame;
use crate::ui_event::UiEvent;

/// Bumped on any change a peer of the other version would misread.
pub(crate) const PROTOCOL: u32 = 1;

pub(crate) const MAX_HEADER: u32 = 1 << 20;
pub(crate) const MAX_PAYLOAD: u32 = 16 << 20;

#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
#[serde(tag = "type", rename_all = "kebab-case")]
pub enum Header {
    // --- the handshake ---
    Hello {
        protocol: u32,
        version: String,
    },
    Welcome {
        protocol: u32,
        version: String,
        pid: u32,
    },
    Refused {
        reason: String,
    },

    // --- client requests: one per connection, after the handshake ---
    Status,
    Stop,
    CloneNew {
        name: String,
        brain: String,
        dir: PathBuf,
        permission_mode: Option<String>,
        /// Secret-looking variables the clone's brain may see (`--pass-env`).
        #[serde(default, skip_serializing_if = "Vec::is_empty")]
        pass_env: Vec<String>,
        /// The zone whose daemon runs the clone (`--zone`); `None`: this daemon.
        #[serde(default, skip_serializing_if = "Option::is_none")]
        zone: Option<String>,
        /// Variables of the client's shell for the brain (`--forward-env`): held in memory,
        /// never written to disk on either side.
        #[serde(default, skip_serializing_if = "ForwardedEnv::is_empty")]
        env: ForwardedEnv,
    },
    CloneList,
    CloneRm {
        name: String,
    },
    /// `ask` / `act`; `lines`: also relay the brain's stream-json lines (`--output-format
    /// stream-json`).
    Dispatch {
        name: String,
        verb: Verb,
        prompt: String,
        lines: bool,
    },
    Watch {
        name: String,
        /// A watcher coming back after a gap (a zone's dropped link): send the events it
        /// missed first — those after `since`, or without it the current turn's.
        #[serde(default, skip_serializing_if = "std::ops::Not::not")]
        replay: bool,
        #[serde(default, skip_serializing_if = "Option::is_none")]
        since: Option<u64>,
    },
    Talk {
        name: String,
        cols: u16,
        rows: u16,
    },
    /// `ouro agent run`: runs an agent instance on `task` in `dir`; without `detach` the
    /// connection then follows the run (as `watch` does) until its `agent-result`.
    AgentRun {
        name: String,
        task: String,
        dir: PathBuf,
        brain: Option<String>,
        detach: bool,
    },
    AgentStop {
        name: String,
    },
    /// Every parked permission question of every clone and agent, and of the clones this
    /// daemon relays to zones unless `here_only` (what a daemon asks a zone's: a question is
    /// never passed on from host to host).
    AgentPending {
        #[serde(default, skip_serializing_if = "std::ops::Not::not")]
        here_only: bool,
    },
    /// [`Header::AgentPending`], answered now and again after every change until the client
    /// closes the connection.
    AgentPendingFollow,
    /// Answers a parked question by its id, from anywhere (`here_only`: as for
    /// [`Header::AgentPending`]).
    AgentAnswer {
        request_id: String,
        allow: bool,
        always: bool,
        message: Option<String>,
        #[serde(default, skip_serializing_if = "std::ops::Not::not")]
        here_only: bool,
    },

    // --- while a request runs ---
    /// Keyboard bytes for the talking brain (payload).
    Input,
    Resize {
        cols: u16,
        rows: u16,
    },
    Detach,
    PermissionAnswer {
        request_id: String,
        allow: bool,
        /// Allow calls like it for the rest of the turn.
        always: bool,
    },

    // --- daemon answers ---
    Ok {
        message: String,
    },
    Error {
        message: String,
    },
    StatusReport {
        pid: u32,
        version: String,
        socket: PathBuf,
        home: PathBuf,
        clones: usize,
        uptime_secs: u64,
    },
    Clones {
        clones: Vec<CloneInfo>,
    },
    /// The request waits for the clone (a talk or another turn holds it).
    Queued {
        reason: String,
    },
    /// Something a watcher should know that is not a brain event (a turn or talk began).
    Notice {
        message: String,
    },
    Event {
        event: UiEvent,
        /// Its number in the clone's event log (what a watcher coming back names as `since`).
        #[serde(default, skip_serializing_if = "Option::is_none")]
        seq: Option<u64>,
    },
    /// One stream-json line the brain printed (payload).
    Line,
    Permission {
        clone: String,
        request_id: String,
        tool_name: String,
        input: Value,
        reason: Option<String>,
    },
    /// A permission question was answered (by anyone) or timed out: drop the prompt.
    PermissionSettled {
        request_id: String,
        outcome: String,
    },
    TurnEnd {
        is_error: bool,
        text: String,
        session_id: Option<String>,
        cost_usd: f64,
    },
    TalkReady {
        pid: u32,
    },
    AgentStarted {
        name: String,
        run_id: String,
        dir: PathBuf,
    },
    /// A run ended: its `task:result` (an `agents::instance::RunRecord`).
    AgentResult {
        name: String,
        result: Value,
    },
    Pending {
        questions: Vec<PendingQuestion>,
    },
    /// The current screen, drawn from scratch (payload), sent before live output.
    Screen,
    /// Terminal output of the talking brain (payload).
    Output,
    TalkEnd {
        reason: TalkEndReason,
        code: Option<i32>,
    },
}

#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize, Deserialize)]
#[serde(rename_all = "kebab-case")]
pub enum TalkEndReason {
    BrainExit,
    Detach,
    /// The daemon is stopping.
    Shutdown,
}

/// One row of `ouro clone list`.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct CloneInfo {
    pub name: String,
    pub brain: String,
    pub mode: crate::brain::Mode,
    pub pid: Option<u32>,
    pub series: Option<String>,
    pub dir: PathBuf,
    pub busy: bool,
    /// The zone it runs in; `None`: this daemon's host.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub zone: Option<String>,
    /// Why its zone cannot be reached now (ssh's reason), when it cannot.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub unreachable: Option<String>,
}

/// Variables forwarded from a client's shell to a brain, by name. Their values never appear in
/// a log or a debug print.
#[derive(Clone, Default, PartialEq, Serialize, Deserialize)]
#[serde(transparent)]
pub struct ForwardedEnv(pub std::collections::BTreeMap<String, String>);

impl ForwardedEnv {
    pub fn is_empty(&self) -> bool {
        self.0.is_empty()
    }
}

impl std::fmt::Debug for ForwardedEnv {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_list().entries(self.0.keys()).finish()
    }
}

#[derive(Debug, thiserror::Error)]
pub enum FrameError {
    #[error("the connection failed: {0}")]
    Io(#[from] std::io::Error),
    #[error("the peer sent a frame of {0}")]
    TooLarge(#[from] crate::sys::frame::TooLarge),
    #[error("the peer sent a frame this ouro cannot read ({0}); are both the same ouro version?")]
    Malformed(#[from] serde_json::Error),
    #[error("the connection closed in the middle of a frame")]
    Truncated,
}

/// A frame read off the socket.
#[derive(Debug, Clone, PartialEq)]
pub struct Frame {
    pub header: Header,
    pub payload: Vec<u8>,
}

impl Frame {
    pub fn new(header: Header) -> Self {
        Frame {
            header,
            payload: Vec::new(),
        }
    }

    pub fn with_payload(header: Header, payload: impl Into<Vec<u8>>) -> Self {
        Frame {
            header,
            payload: payload.into(),
        }
    }
}

impl From<Header> for Frame {
    fn from(header: Header) -> Self {
        Frame::new(header)
    }
}

/// Appends one frame, as it goes on the wire, to `buf`.
pub fn encode_into(frame: &Frame, buf: &mut Vec<u8>) -> Result<(), FrameError> {
    let header = serde_json::to_vec(&frame.header)?;
    let header_len = frame::encode(header.len(), MAX_HEADER)?;
    let payload_len = frame::encode(frame.payload.len(), MAX_PAYLOAD)?;
    buf.reserve(8 + header.len() + frame.payload.len());
    buf.extend_from_slice(&header_len);
    buf.extend_from_slice(&payload_len);
    buf.extend_from_slice(&header);
    buf.extend_from_slice(&frame.payload);
    Ok(())
}

/// Writes one frame and flushes it.
pub async fn write<W: AsyncWrite + Unpin>(out: &mut W, frame: &Frame) -> Result<(), FrameError> {
    let mut buf = Vec::new();
    encode_into(frame, &mut buf)?;
    out.write_all(&buf).await?;
    out.flush().await?;
    Ok(())
}

/// Reads one frame; `None` when the peer closed the connection between frames.
pub async fn read<R: AsyncRead + Unpin>(input: &mut R) -> Result<Option<Frame>, FrameError> {
    let mut lengths = [0u8; 8];
    let mut filled = 0;
    while filled < lengths.len() {
        let n = input.read(&mut lengths[filled..]).await?;
        if n == 0 {
            return if filled == 0 {
                Ok(None)
            } else {
                Err(FrameError::Truncated)
            };
        }
        filled += n;
    }
    let header_len = frame::decode([lengths[0], lengths[1], lengths[2], lengths[3]], MAX_HEADER)?;
    let payload_len = frame::decode(
        [lengths[4], lengths[5], lengths[6], lengths[7]],
        MAX_PAYLOAD,
    )?;
    let mut header = vec![0u8; header_len as usize];
    read_exact(input, &mut header).await?;
    let mut payload = vec![0u8; payload_len as usize];
    read_exact(input, &mut payload).await?;
    Ok(Some(Frame {
        header: serde_json::from_slice(&header)?,
        payload,
    }))
}

async fn read_exact<R: AsyncRead + Unpin>(input: &mut R, buf: &mut [u8]) -> Result<(), FrameError> {
    match input.read_exact(buf).await {
        Ok(_) => Ok(()),
        Err(e) if e.kind() == std::io::ErrorKind::UnexpectedEof => Err(FrameError::Truncated),
        Err(e) => Err(e.into()),
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    async fn round_trip(frame: Frame) -> Frame {
        let mut buf = Vec::new();
        write(&mut buf, &frame).await.unwrap();
        let mut slice = buf.as_slice();
        let back = read(&mut slice).await.unwrap().unwrap();
        assert!(read(&mut slice).await.unwrap().is_none());
        back
    }

    #[tokio::test]
    async fn every_kind_of_frame_reads_back_as_written() {
        let frames = vec![
            Frame::new(Header::Hello {
                protocol: PROTOCOL,
                version: "1.2.3".into(),
            }),
            Frame::new(Header::Talk {
                name: "c1".into(),
                cols: 80,
                rows: 24,
            }),
            Frame::with_payload(Header::Input, vec![0u8, 0xff, 0x1b, b'\n', 0x10]),
            Frame::with_payload(Header::Output, "é\r\n".as_bytes()),
            Frame::new(Header::TalkEnd {
                reason: TalkEndReason::BrainExit,
                code: Some(3),
            }),
            Frame::new(Header::Event {
                seq: Some(7),
                event: UiEvent::ChatDelta {
                    session_id: "s".into(),
                    text: "hi".into(),
                },
            }),
            Frame::new(Header::Dispatch {
                name: "c".into(),
                verb: Verb::Act,
                prompt: "do it".into(),
                lines: true,
            }),
        ];
        for frame in frames {
            assert_eq!(round_trip(frame.clone()).await, frame);
        }
    }

    #[tokio::test]
    async fn the_header_is_tagged_json_in_kebab_case() {
        let json = serde_json::to_value(Header::TalkEnd {
            reason: TalkEndReason::BrainExit,
            code: None,
        })
        .unwrap();
        assert_eq!(
            json,
            serde_json::json!({"type": "talk-end", "reason": "brain-exit", "code": null})
        );
    }

    #[tokio::test]
    async fn oversized_truncated_and_garbage_frames_are_errors() {
        let mut huge = Vec::new();
        huge.extend_from_slice(&(MAX_HEADER + 1).to_be_bytes());
        huge.extend_from_slice(&0u32.to_be_bytes());
        assert!(matches!(
            read(&mut huge.as_slice()).await,
            Err(FrameError::TooLarge(_))
        ));

        let mut buf = Vec::new();
        write(&mut buf, &Frame::new(Header::Status)).await.unwrap();
        buf.pop();
        assert!(matches!(
            read(&mut buf.as_slice()).await,
            Err(FrameError::Truncated)
        ));
        assert!(matches!(
            read(&mut &[0u8, 0, 0][..]).await,
            Err(FrameError::Truncated)
        ));

        let mut garbage = Vec::new();
        garbage.extend_from_slice(&5u32.to_be_bytes());
        garbage.extend_from_slice(&0u32.to_be_bytes());
        garbage.extend_from_slice(b"nope!");
        assert!(matches!(
            read(&mut garbage.as_slice()).await,
            Err(FrameError::Malformed(_))
        ));
    }
}
