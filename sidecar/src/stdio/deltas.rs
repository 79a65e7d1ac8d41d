//! A turn's engine events as `chat/delta` notifications: numbered per turn (`seq` strictly
//! increasing), in order, through the outbox.

use tokio::sync::mpsc;

use super::outbox::Outbox;
use crate::engine::Event;
use crate::protocol::{notification, ChatDelta, DeltaBody};

/// Events buffered between the engine and the outbox (which is bounded itself).
pub const BUFFER: usize = 256;

impl From<Event> for DeltaBody {
    fn from(event: Event) -> Self {
        match event {
            Event::Text(text) => DeltaBody::Text { text },
            Event::Thinking(text) => DeltaBody::Thinking { text },
            Event::ThinkingDone => DeltaBody::ThinkingDone,
            Event::ToolStarted { call_id, tool, summary } => DeltaBody::ToolStarted { call_id, tool, summary },
            Event::ToolCompleted { call_id, tool, summary, ok, detail, .. } => {
                DeltaBody::ToolCompleted { call_id, tool, summary, ok, detail }
            }
            Event::PermissionDenied { tool, summary, hint } => DeltaBody::PermissionDenied { tool, summary, hint },
            Event::Session { session_id, resumed, replayed } => DeltaBody::Session { session_id, resumed, replayed },
            Event::Usage(usage) => DeltaBody::Usage { usage },
            Event::ToolCall { call_id, name, input } => DeltaBody::ToolCall { call_id, name, input },
        }
    }
}

/// Forward `events` until the turn drops its sender.
pub async fn forward(turn_id: &str, mut events: mpsc::Receiver<Event>, outbox: &Outbox) {
    let mut seq = 0;
    while let Some(event) = events.recv().await {
        seq += 1;
        let delta = ChatDelta { turn_id: turn_id.into(), seq, body: event.into() };
        outbox.notify(notification::CHAT_DELTA, &delta).await;
    }
}
