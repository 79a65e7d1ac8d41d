//! Which backend serves a front door. Today there is one, the Cursor CLI in print mode; the
//! choice (and a fallback between backends) is made here, so the engine never names one.

use std::sync::Arc;

use super::cursor_print::CursorPrint;
use super::seam::Backend;
pub use super::seam::Settings;

pub fn backend(settings: Settings) -> Arc<dyn Backend> {
    CursorPrint::new(settings)
}
