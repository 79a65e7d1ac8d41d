//! The terms the sidecar's layers share with each other, with its clients and with its own files:
//! a turn's mode and messages, the client's tools, models, failure kinds, the API key, the backend
//! choice. They derive serde because they are stored (the session store, the model cache) and sent
//! exactly as they are; `protocol/` builds the stdio wire's messages out of them, and only the
//! front doors (`stdio/`, `http/`, `startup.rs`, `doctor.rs`) know those messages.

mod backend_choice;
mod chat;
mod failure;
mod models;
mod secret;
mod tools;

pub use backend_choice::BackendChoice;
pub use chat::{ChatMessage, Image, Mode, Role, Usage};
pub use failure::ErrorKind;
pub use models::{ModelBase, ModelCapabilities, ModelInfo, ModelVariant};
pub use secret::Secret;
pub use tools::{ToolCall, ToolChoice, ToolDefinition, ToolResult};
