//! `ouro agent …` run in this very process rather than in the daemon: the Ouroboros IPC v1
//! (`ipc`), through which a supervisor that is not ouro drives one agent task.

pub mod ipc;
