//! The sections of the benchmark, one module each; `measure` returns the section's rows.

pub mod client_tools;
pub mod concurrency;
pub mod first_delta;
pub mod footprint;
pub mod http_routes;
pub mod model_picker;
pub mod new_conversation;
pub mod parser;
pub mod sizes;
pub mod streaming;
pub mod tails;
pub mod warm_backend;
