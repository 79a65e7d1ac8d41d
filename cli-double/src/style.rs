//! ANSI colour for the human-readable subcommands (`models`, `status`).
//!
//! The real CLI colours these outputs through chalk whenever `FORCE_COLOR` is inherited — a
//! documented trap for drivers that parse `models` (docs/cursor-cli.md §7.2). The double reproduces
//! it so the sidecar's ANSI stripping and its `NO_COLOR=1 FORCE_COLOR=0` child env get tested.

use crate::settings;

/// Decides whether to colour:
/// * `CURSOR_DOUBLE_COLOR=always` / `never` wins over everything;
/// * otherwise `NO_COLOR` (non-empty) or `FORCE_COLOR=0`/`false` disable colour;
/// * otherwise `FORCE_COLOR` set to anything else enables it;
/// * otherwise colour only when stdout is a terminal and `TERM` is not `dumb` (chalk's default).
pub fn colour_enabled() -> bool {
    match settings::var("CURSOR_DOUBLE_COLOR").as_deref() {
        Some("always") => return true,
        Some("never") => return false,
        _ => {}
    }
    if settings::var("NO_COLOR").is_some_and(|v| !v.is_empty()) {
        return false;
    }
    match settings::var("FORCE_COLOR").as_deref() {
        Some("0") | Some("false") => false,
        Some(_) => true,
        None => crate::process::stdout_is_tty() && settings::var("TERM").as_deref() != Some("dumb"),
    }
}

/// Wraps text in SGR codes when colour is on.
#[derive(Clone, Copy)]
pub struct Painter {
    pub on: bool,
}

impl Painter {
    fn wrap(self, open: u8, close: u8, text: &str) -> String {
        if self.on {
            format!("\x1b[{open}m{text}\x1b[{close}m")
        } else {
            text.to_owned()
        }
    }
    pub fn bold(self, text: &str) -> String {
        self.wrap(1, 22, text)
    }
    pub fn dim(self, text: &str) -> String {
        self.wrap(2, 22, text)
    }
    pub fn green(self, text: &str) -> String {
        self.wrap(32, 39, text)
    }
    pub fn yellow(self, text: &str) -> String {
        self.wrap(33, 39, text)
    }
    pub fn cyan(self, text: &str) -> String {
        self.wrap(36, 39, text)
    }
    /// An OSC 8 hyperlink terminated by ST (`ESC \`), so strippers must handle both OSC endings.
    pub fn link(self, url: &str, text: &str) -> String {
        if self.on {
            format!("\x1b]8;;{url}\x1b\\{text}\x1b]8;;\x1b\\")
        } else {
            text.to_owned()
        }
    }
    /// An OSC 0 window-title sequence terminated by BEL.
    pub fn title(self, title: &str) -> String {
        if self.on {
            format!("\x1b]0;{title}\x07")
        } else {
            String::new()
        }
    }
}

/// Removes CSI (`ESC [ ... final`) and OSC (`ESC ] ... BEL|ESC \`) sequences — used when the double
/// reads a models file that was itself captured with colour.
pub fn strip_ansi(s: &str) -> String {
    let mut out = String::with_capacity(s.len());
    let mut chars = s.chars().peekable();
    while let Some(c) = chars.next() {
        if c != '\x1b' {
            out.push(c);
            continue;
        }
        match chars.peek() {
            Some('[') => {
                chars.next();
                for c in chars.by_ref() {
                    if ('\x40'..='\x7e').contains(&c) {
                        break;
                    }
                }
            }
            Some(']') => {
                chars.next();
                while let Some(c) = chars.next() {
                    if c == '\x07' {
                        break;
                    }
                    if c == '\x1b' && chars.peek() == Some(&'\\') {
                        chars.next();
                        break;
                    }
                }
            }
            _ => {}
        }
    }
    out
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn strips_csi_and_both_osc_endings() {
        let p = Painter { on: true };
        let s = format!("{}{} - {}", p.title("x"), p.cyan("auto"), p.link("https://x", "Auto"));
        assert_eq!(strip_ansi(&s), "auto - Auto");
    }
}
