//! `FrameCodec` (LSP `Content-Length` framing) fed arbitrary bytes, split at fuzzer-chosen points.
//! The input layout and the rules checked are `sidecar/src/stdio/transport/invariants.rs`'s,
//! which the regression tests run too.
#![no_main]

use cursor_bridge::stdio::transport::invariants::check_input;
use libfuzzer_sys::fuzz_target;

fuzz_target!(|data: &[u8]| check_input(data));
