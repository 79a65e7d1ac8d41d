//! The model catalogue: `models` / `--list-models` output (docs/cursor-cli.md §7.1), `--model`
//! validation and the display name reported in `system/init.model`.

use crate::settings;
use crate::style::{strip_ansi, Painter};

/// One catalogue line: `<id> - <name>[ (current, default)]`.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct Model {
    pub id: String,
    pub name: String,
    pub current: bool,
    pub default: bool,
}

impl Model {
    fn new(id: &str, name: &str) -> Model {
        Model { id: id.to_owned(), name: name.to_owned(), current: false, default: false }
    }
}

/// Built-in catalogue. Deliberately awkward in the ways real output is: a display name with a
/// double space and parentheses, and one line printed twice (real accounts list ~190 models and
/// duplicates have been seen).
pub(crate) fn builtin() -> Vec<Model> {
    let mut auto = Model::new("auto", "Auto");
    auto.current = true;
    auto.default = true;
    vec![
        auto,
        Model::new("composer-2.5", "Composer 2.5"),
        Model::new("composer-2.5-fast", "Composer 2.5 Fast"),
        Model::new("sonnet-5-thinking", "Claude Sonnet 5 Thinking"),
        Model::new("opus-5", "Claude Opus 5"),
        Model::new("claude-opus-4-8", "Claude Opus 4.8 1M"),
        Model::new("gpt-5.6-sol", "GPT-5.6 Sol"),
        Model::new("grok-4.6", "Grok 4.6"),
        Model::new("gemini-3.7-flash", "Gemini 3.7 Flash"),
        Model::new("gemini-3.7-flash", "Gemini 3.7 Flash"),
        Model::new("kimi-k2.5", "Kimi K2.5  (NO ZDR)"),
    ]
}

pub const TIP: &str = "Tip: use --model <id> (or /model <id> in interactive mode) to switch. Parameterized models also accept quoted overrides, e.g. --model 'claude-opus-4-8[context=1m,effort=high,fast=false]'.";

/// The catalogue in effect for this run.
pub struct Catalogue {
    pub models: Vec<Model>,
    /// `CURSOR_DOUBLE_MODELS_FILE` content, printed verbatim instead of the rendered list.
    pub verbatim: Option<String>,
    /// `CURSOR_DOUBLE_NO_MODELS=1`: the account has no models.
    pub empty: bool,
}

impl Catalogue {
    /// Loads the catalogue. A models file that cannot be read is reported as an error message
    /// (a double-only failure; the caller exits 2).
    pub fn load() -> Result<Catalogue, String> {
        let empty = settings::enabled("CURSOR_DOUBLE_NO_MODELS");
        if let Some(path) = settings::non_empty("CURSOR_DOUBLE_MODELS_FILE") {
            let text = std::fs::read_to_string(&path)
                .map_err(|e| format!("cannot read CURSOR_DOUBLE_MODELS_FILE {path}: {e}"))?;
            return Ok(Catalogue { models: parse_listing(&text), verbatim: Some(text), empty });
        }
        Ok(Catalogue { models: builtin(), verbatim: None, empty })
    }

    /// The `models` output, with a trailing newline.
    pub fn render(&self, paint: Painter) -> String {
        if let Some(text) = &self.verbatim {
            return text.clone();
        }
        let mut out = paint.title("Cursor Agent");
        out.push_str(&paint.bold("Available models"));
        out.push_str("\n\n");
        for m in &self.models {
            out.push_str(&paint.cyan(&m.id));
            out.push_str(" - ");
            out.push_str(&m.name);
            let marker = match (m.current, m.default) {
                (true, true) => " (current, default)",
                (true, false) => " (current)",
                (false, true) => " (default)",
                (false, false) => "",
            };
            if !marker.is_empty() {
                out.push(' ');
                out.push_str(&paint.green(&marker[1..]));
            }
            out.push('\n');
        }
        out.push('\n');
        let body = TIP.strip_prefix("Tip:").unwrap_or(TIP);
        out.push_str(&paint.link("https://cursor.com/docs/cli/reference/parameters", &paint.dim("Tip:")));
        out.push_str(body);
        out.push('\n');
        out
    }

    /// Ids in listing order without repeats (used in the `Cannot use this model` message).
    pub fn ids(&self) -> Vec<&str> {
        let mut ids: Vec<&str> = Vec::new();
        if self.empty {
            return vec!["auto"];
        }
        for m in &self.models {
            if !ids.contains(&m.id.as_str()) {
                ids.push(&m.id);
            }
        }
        ids
    }

    /// Whether `--model` names a usable model. `auto` always works; bracket overrides such as
    /// `opus-5[effort=high]` are checked by their base id.
    pub fn accepts(&self, requested: &str) -> bool {
        let base = base_id(requested);
        base == "auto" || (!self.empty && self.models.iter().any(|m| m.id == base))
    }

    /// The human display name for `system/init.model` (the real CLI never echoes the id there).
    pub fn display_name(&self, requested: Option<&str>) -> String {
        let found = match requested.map(base_id) {
            Some(base) => self.models.iter().find(|m| m.id == base),
            None => self.models.iter().find(|m| m.current),
        };
        match (found, requested) {
            (Some(m), _) => m.name.clone(),
            (None, Some(id)) if base_id(id) != "auto" => base_id(id).to_owned(),
            _ => "Auto".to_owned(),
        }
    }
}

pub fn base_id(requested: &str) -> &str {
    requested.split('[').next().unwrap_or(requested).trim()
}

/// Parses `models` output (optionally coloured, optionally with old `  8) ` numbering) into models.
pub fn parse_listing(text: &str) -> Vec<Model> {
    let mut models = Vec::new();
    for raw in strip_ansi(text).lines() {
        let mut line = raw.trim();
        if let Some((num, rest)) = line.split_once(") ") {
            if !num.is_empty() && num.chars().all(|c| c.is_ascii_digit()) {
                line = rest;
            }
        }
        let Some((id, rest)) = line.split_once(" - ") else {
            continue;
        };
        let valid_id = id.chars().next().is_some_and(|c| c.is_ascii_alphanumeric())
            && id.chars().all(|c| c.is_ascii_alphanumeric() || "._:/-".contains(c));
        if !valid_id {
            continue;
        }
        let mut model = Model::new(id, rest);
        for (suffix, current, default) in
            [(" (current, default)", true, true), (" (current)", true, false), (" (default)", false, true)]
        {
            if let Some(name) = rest.strip_suffix(suffix) {
                model = Model { id: id.to_owned(), name: name.to_owned(), current, default };
                break;
            }
        }
        models.push(model);
    }
    models
}

#[cfg(test)]
mod tests {
    use super::*;

    fn builtin_catalogue() -> Catalogue {
        Catalogue { models: builtin(), verbatim: None, empty: false }
    }

    #[test]
    fn plain_render_round_trips_through_the_parser() {
        let c = builtin_catalogue();
        let text = c.render(Painter { on: false });
        assert!(text.starts_with("Available models\n\nauto - Auto (current, default)\n"));
        assert!(text.ends_with(&format!("\n\n{TIP}\n")));
        assert_eq!(parse_listing(&text), builtin());
        assert_eq!(parse_listing(&c.render(Painter { on: true })), builtin());
    }

    #[test]
    fn validation_and_display_names() {
        let c = builtin_catalogue();
        assert!(c.accepts("auto") && c.accepts("opus-5[effort=high]") && !c.accepts("nope"));
        assert_eq!(c.display_name(None), "Auto");
        assert_eq!(c.display_name(Some("composer-2.5-fast")), "Composer 2.5 Fast");
        assert_eq!(c.ids().iter().filter(|i| **i == "gemini-3.7-flash").count(), 1);
    }
}
