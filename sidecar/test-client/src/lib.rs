//! The client side of the sidecar's stdio protocol, shared by the integration tests
//! (`sidecar/tests/process/`) and the benchmark (`cargo xtask bench`); never part of the shipped
//! binary.
//!
//! - [`framing`]: Content-Length frames, written and read back; the reader thread stamps every
//!   frame with the time it arrived (the benchmark times deltas by it)
//! - [`process`]: starting `cursor-bridge` with its home, state and log folders in a scratch folder,
//!   and the [`Connection`] on its pipes: requests, notifications, raw bytes, frames in order
//! - [`message`]: the JSON-RPC messages and the parameters both sides send
//! - [`readme`]: the README's client configurations, as the tests that exercise them read them

pub mod framing;
pub mod message;
pub mod process;
pub mod readme;

pub use framing::{frame, frames, next_frame, Stamped};
pub use message::{assistant, initialize_params, notification, request, user};
pub use process::{wait_with_timeout, Connection, Launcher, Process, RecvError, Stderr};
pub use readme::{readme_snippet, shell_command, shell_env};
