//! Holding back the answer's text only while a `[TOOL_CALLS: …]` block may be starting, so the
//! client never sees the block and plain answers stream as fast as without tools. When the model
//! must call a tool, everything is held: the text is shown only if no call came.

use super::prompt_protocol::MARKER;
use crate::backend::TextHold;

#[derive(Debug, Default)]
pub struct Hold {
    /// Text not shown yet: a tail that may be the marker's start, or all of it (`all`).
    pending: String,
    /// The block, from the marker on, once it began.
    block: Option<String>,
    all: bool,
}

impl Hold {
    /// `all`: hold every word until the turn ends (a tool call is required).
    pub fn new(all: bool) -> Self {
        Hold { all, ..Hold::default() }
    }
}

impl TextHold for Hold {
    fn push(&mut self, text: &str) -> String {
        if let Some(block) = &mut self.block {
            block.push_str(text);
            return String::new();
        }
        self.pending.push_str(text);
        if let Some(at) = self.pending.find(MARKER) {
            self.block = Some(self.pending[at..].to_string());
            // The blank lines before the block belong to it: the client's copy of the reply
            // ends with the text.
            let end = self.pending[..at].trim_end().len();
            self.pending.truncate(end);
            return if self.all { String::new() } else { std::mem::take(&mut self.pending) };
        }
        if self.all {
            return String::new();
        }
        // Keep back the longest tail that could still grow into the marker, and the whitespace
        // before it (shown once more text follows, dropped if the block does).
        let from = self.pending.len().saturating_sub(MARKER.len() - 1);
        let keep = (from..self.pending.len())
            .filter(|&i| self.pending.is_char_boundary(i))
            .find(|&i| MARKER.starts_with(&self.pending[i..]))
            .unwrap_or(self.pending.len());
        let keep = self.pending[..keep].trim_end().len();
        let rest = self.pending.split_off(keep);
        std::mem::replace(&mut self.pending, rest)
    }

    fn flush(&mut self) -> String {
        std::mem::take(&mut self.pending)
    }

    fn block(&self) -> Option<&str> {
        self.block.as_deref()
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    /// Feed `chunks`, return (what the client saw, the captured block).
    fn run(all: bool, chunks: &[&str]) -> (String, Option<String>) {
        let mut hold = Hold::new(all);
        let mut shown: String = chunks.iter().map(|c| hold.push(c)).collect();
        shown.push_str(&hold.flush());
        (shown, hold.block().map(str::to_string))
    }

    #[test]
    fn the_block_never_reaches_the_client() {
        let cases: &[(&str, &[&str], &str, Option<&str>)] = &[
            ("plain answer", &["Hello ", "world"], "Hello world", None),
            ("brackets that are not the marker", &["see [1] and [TOOL", "S] ok"], "see [1] and [TOOLS] ok", None),
            ("marker in one piece", &["Creating. ", "[TOOL_CALLS: [{}]]"], "Creating.", Some("[TOOL_CALLS: [{}]]")),
            ("marker split", &["Creating. [TO", "OL_CAL", "LS: [", "{}]]"], "Creating.", Some("[TOOL_CALLS: [{}]]")),
            (
                "blank lines before the block",
                &["Creating.\n", "\n[TOOL_CALLS: []]"],
                "Creating.",
                Some("[TOOL_CALLS: []]"),
            ),
            ("spaces between words still shown", &["a ", "b \n", "c"], "a b \nc", None),
            ("text after the block", &["[TOOL_CALLS: []] ", "bye"], "", Some("[TOOL_CALLS: []] bye")),
            ("a lone bracket at the end", &["list: ["], "list: [", None),
            ("unicode before", &["é[TOOL_", "CALLS: x"], "é", Some("[TOOL_CALLS: x")),
        ];
        for (what, chunks, shown, block) in cases {
            let (s, b) = run(false, chunks);
            assert_eq!((s.as_str(), b.as_deref()), (*shown, *block), "{what}");
        }
    }

    #[test]
    fn only_a_tail_that_could_be_the_marker_waits() {
        let mut hold = Hold::new(false);
        assert_eq!(hold.push("Hello [TOOL_"), "Hello");
        assert_eq!(hold.push("BOX]"), " [TOOL_BOX]");
    }

    #[test]
    fn a_required_call_holds_everything() {
        assert_eq!(run(true, &["Let me ", "think"]), ("Let me think".into(), None));
        assert_eq!(run(true, &["Sure. [TOOL_CALLS: [", "]]"]), ("Sure.".into(), Some("[TOOL_CALLS: []]".into())));
    }
}
