//! The output of `agent models` / `agent --list-models` (docs/cursor-cli.md §7.1) and the
//! metadata the bridge advertises for each model (docs/cursor-cli.md §11).
//!
//! Decisions where the sources are unsure (docs/cursor-cli.md §7.1 gives only ids and names):
//! * Context windows come from the family table of docs/cursor-cli.md §11, matched by id prefix. An id
//!   no rule knows gets 128,000 input / 16,384 output tokens; [`model_limits`] reports that as
//!   `known: false` so the caller can say "guessed" in the model's tooltip (the family name of
//!   such a model is still its first dash-separated word, never a placeholder).
//! * The standard window is advertised even for ids that look like Max Mode / 1M variants: the
//!   bridge never assumes a larger window than the family's standard one.
//! * `thinking` is claimed only when the id or name says so (`thinking`, `reasoning`, an effort
//!   suffix `-high`/`-xhigh`/`-max`, or the words High/Max in the name) or for families that
//!   always reason: `gpt-5…` and OpenAI's o-series (`o1`, `o3`, `o4…`). Nothing else is assumed.
//! * `toolCalling` is always true (the CLI runs its tools itself and the editor sees that
//!   activity); `imageInput` is false here: whether models take images is the agent's to say,
//!   and the engine sets it for every model from `Backend::takes_images` (ACP's
//!   `promptCapabilities.image`; print mode sends text only).

use crate::util::text::strip_ansi;
use crate::util::text::{contains_ignore_case, one_line};
use crate::vocab::{ModelCapabilities, ModelInfo};

/// One line of the model list.
#[derive(Debug, Clone, PartialEq)]
pub struct CliModel {
    pub id: String,
    pub name: String,
    /// ` (current)` marker: the model the CLI uses when `--model` is not given.
    pub is_current: bool,
    /// ` (default)` marker.
    pub is_default: bool,
}

#[derive(Debug, Clone, PartialEq)]
pub enum ModelListError {
    /// `Error: Authentication required…` (printed with exit status 0, docs/cursor-cli.md §7.1).
    AuthRequired,
    /// `No models available for this account`.
    NoModels,
    /// Neither a model line nor a known message; `excerpt` is the start of the output (ANSI
    /// stripped, one line, at most 200 characters) for the log.
    Unrecognised { excerpt: String },
}

/// Context window and output limit of a model id, and whether they come from the family table
/// (`known`) or are the conservative fallback for an unknown family.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct ModelLimits {
    pub max_input_tokens: u32,
    pub max_output_tokens: u32,
    pub known: bool,
}

const KNOWN_MAX_OUTPUT_TOKENS: u32 = 32_768;
const UNKNOWN_MAX_INPUT_TOKENS: u32 = 128_000;
const UNKNOWN_MAX_OUTPUT_TOKENS: u32 = 16_384;
const EXCERPT_MAX_CHARS: usize = 200;

/// Parses the model list. Grammar (docs/cursor-cli.md §7.1): a header `Available models`, blank
/// lines, then lines `<id> - <display name>` with an optional trailing ` (current)`, ` (default)`
/// or ` (current, default)` (older builds: `  8) <id> - <name>`); every other line (the `Tip:`
/// line, prose) is ignored. ANSI sequences are stripped first (colour, docs/cursor-cli.md §7.2)
/// and `\r\n` is accepted. A repeated id is kept once, at its first position, with the markers of
/// all its lines.
pub fn parse_model_list(output: &str) -> Result<Vec<CliModel>, ModelListError> {
    let text = strip_ansi(output);
    if mentions_auth_failure(&text) {
        return Err(ModelListError::AuthRequired);
    }
    let mut models: Vec<CliModel> = Vec::new();
    for line in text.lines() {
        let Some(model) = parse_model_line(line) else {
            continue;
        };
        match models.iter_mut().find(|known| known.id == model.id) {
            Some(known) => {
                known.is_current |= model.is_current;
                known.is_default |= model.is_default;
            }
            None => models.push(model),
        }
    }
    if !models.is_empty() {
        return Ok(models);
    }
    if contains_ignore_case(&text, "no models available") {
        return Err(ModelListError::NoModels);
    }
    Err(ModelListError::Unrecognised { excerpt: excerpt(&text) })
}

fn mentions_auth_failure(text: &str) -> bool {
    ["authentication required", "not logged in", "api key is invalid"]
        .iter()
        .any(|needle| contains_ignore_case(text, needle))
}

/// `[A-Za-z0-9][A-Za-z0-9._:/-]*` (docs/cursor-cli.md §7.1).
fn is_id_char(c: char) -> bool {
    c.is_ascii_alphanumeric() || matches!(c, '.' | '_' | ':' | '/' | '-')
}

fn parse_model_line(line: &str) -> Option<CliModel> {
    let line = strip_list_number(line.trim());
    if !line.starts_with(|c: char| c.is_ascii_alphanumeric()) {
        return None;
    }
    let id_end = line.find(|c: char| !is_id_char(c)).unwrap_or(line.len());
    let (id, rest) = line.split_at(id_end);
    // ` - ` between id and name: whitespace, one dash, whitespace.
    let after_gap = rest.trim_start();
    if after_gap.len() == rest.len() {
        return None;
    }
    let after_dash = after_gap.strip_prefix('-')?;
    let name_part = after_dash.trim_start();
    if name_part.len() == after_dash.len() && !after_dash.is_empty() {
        return None;
    }
    let (name, is_current, is_default) = split_markers(name_part.trim_end());
    let name = if name.is_empty() { id } else { name };
    Some(CliModel { id: id.to_owned(), name: name.to_owned(), is_current, is_default })
}

/// `8) id - name` / `8. id - name` → `id - name` (older builds, docs/cursor-cli.md §7.1).
fn strip_list_number(line: &str) -> &str {
    let digits = line.find(|c: char| !c.is_ascii_digit()).unwrap_or(line.len());
    if digits == 0 {
        return line;
    }
    let after = &line[digits..];
    match after.strip_prefix(')').or_else(|| after.strip_prefix('.')) {
        Some(rest) if rest.starts_with(char::is_whitespace) => rest.trim_start(),
        _ => line,
    }
}

/// Removes trailing `(current)` / `(default)` / `(current, default)` groups. Any other
/// parenthesised text, such as `(NO ZDR)`, is part of the name.
fn split_markers(mut name: &str) -> (&str, bool, bool) {
    let (mut is_current, mut is_default) = (false, false);
    while let Some(open) = name.strip_suffix(')').and_then(|inner| inner.rfind('(')) {
        let inner = &name[open + 1..name.len() - 1];
        let words: Vec<&str> = inner.split(',').map(str::trim).collect();
        if !words.iter().all(|w| w.eq_ignore_ascii_case("current") || w.eq_ignore_ascii_case("default")) {
            break;
        }
        is_current |= words.iter().any(|w| w.eq_ignore_ascii_case("current"));
        is_default |= words.iter().any(|w| w.eq_ignore_ascii_case("default"));
        name = name[..open].trim_end();
    }
    (name, is_current, is_default)
}

/// The first few non-blank lines, joined by ` | `, at most 200 characters.
fn excerpt(text: &str) -> String {
    let joined = text.lines().map(str::trim).filter(|l| !l.is_empty()).take(3).collect::<Vec<_>>().join(" | ");
    one_line(&joined, EXCERPT_MAX_CHARS)
}

// ---------------------------------------------------------------------------------------------
// Families, limits, capabilities

/// The editor-facing description of a listed model.
pub fn to_model_info(m: &CliModel) -> ModelInfo {
    let limits = model_limits(&m.id);
    ModelInfo {
        id: m.id.clone(),
        name: m.name.clone(),
        family: model_family(&m.id),
        max_input_tokens: limits.max_input_tokens,
        max_output_tokens: limits.max_output_tokens,
        capabilities: ModelCapabilities { thinking: supports_thinking(m), tool_calling: true, image_input: false },
        is_default: m.is_default,
        base: None,
        variant: None,
    }
}

/// The listed models as the editor sees them: every SKU, each told its base model and variant
/// (`backend/cursor/sku.rs`), the CLI's `(default)`/`(current)` marks deciding a base's default where
/// the bare id is not listed.
pub fn to_model_infos(listed: &[CliModel]) -> Vec<ModelInfo> {
    let marked: Vec<&str> = listed.iter().filter(|m| m.is_default || m.is_current).map(|m| m.id.as_str()).collect();
    crate::backend::cursor::sku::group(listed.iter().map(to_model_info).collect(), |m| marked.contains(&m.id.as_str()))
}

/// Context windows by id prefix (docs/cursor-cli.md §11, standard variants), most specific first.
const WINDOW_RULES: &[(&str, u32)] = &[
    ("composer-", 200_000),
    ("opus-5", 300_000),
    ("claude-opus-", 300_000),
    ("sonnet-5", 300_000),
    ("claude-sonnet-", 300_000),
    ("fable-5", 300_000),
    ("claude-", 300_000),
    ("gpt-5.6-", 272_000),
    ("gpt-", 272_000),
    ("grok-4.6", 256_000),
    ("grok-", 256_000),
    ("kimi-k3", 200_000),
    ("glm-5.2", 200_000),
];

/// `auto` / `default`: the router has no fixed window; 200,000 is the conservative figure.
const AUTO_WINDOW: u32 = 200_000;

fn is_auto(id: &str) -> bool {
    id.eq_ignore_ascii_case("auto") || id.eq_ignore_ascii_case("default")
}

pub fn model_limits(id: &str) -> ModelLimits {
    let lower = id.trim().to_ascii_lowercase();
    let window = if is_auto(&lower) {
        Some(AUTO_WINDOW)
    } else {
        WINDOW_RULES.iter().find(|(prefix, _)| lower.starts_with(prefix)).map(|&(_, window)| window)
    };
    match window {
        Some(max_input_tokens) => {
            ModelLimits { max_input_tokens, max_output_tokens: KNOWN_MAX_OUTPUT_TOKENS, known: true }
        }
        None => ModelLimits {
            max_input_tokens: UNKNOWN_MAX_INPUT_TOKENS,
            max_output_tokens: UNKNOWN_MAX_OUTPUT_TOKENS,
            known: false,
        },
    }
}

/// A stable short family name: `composer`, `claude-opus`, `claude-sonnet`, `claude-fable`,
/// `claude-haiku`, `claude`, `gpt`, `grok`, `gemini`, `kimi`, `glm`, `auto`, otherwise the id's
/// first dash-separated word, lower-cased.
pub fn model_family(id: &str) -> String {
    let lower = id.trim().to_ascii_lowercase();
    if is_auto(&lower) {
        return "auto".to_owned();
    }
    let first_word = lower.split('-').next().unwrap_or_default();
    let is_claude = matches!(first_word, "claude" | "opus" | "sonnet" | "fable" | "haiku");
    if is_claude {
        for kind in ["opus", "sonnet", "fable", "haiku"] {
            if lower.split(['-', '.', '_']).any(|word| word == kind) {
                return format!("claude-{kind}");
            }
        }
        return "claude".to_owned();
    }
    if first_word.is_empty() {
        "unknown".to_owned()
    } else {
        first_word.to_owned()
    }
}

fn supports_thinking(m: &CliModel) -> bool {
    let id = m.id.to_ascii_lowercase();
    let name = m.name.to_lowercase();
    let says_reasoning = |s: &str| s.contains("thinking") || s.contains("reasoning");
    let effort_suffix = ["-high", "-xhigh", "-max"].iter().any(|suffix| id.contains(suffix));
    let effort_word = name.split_whitespace().any(|w| w == "high" || w == "max");
    let first_word = id.split('-').next().unwrap_or_default();
    let reasoning_family = id.starts_with("gpt-5") || matches!(first_word, "o1" | "o3" | "o4");
    says_reasoning(&id) || says_reasoning(&name) || effort_suffix || effort_word || reasoning_family
}

#[cfg(test)]
mod tests {
    use std::borrow::Cow;

    use super::*;

    fn model(id: &str, name: &str, is_current: bool, is_default: bool) -> CliModel {
        CliModel { id: id.into(), name: name.into(), is_current, is_default }
    }

    /// A list as docs/cursor-cli.md §7.1 shows it, printed by 2026.09 (`Tip:` line included).
    const PLAIN: &str = "Available models\n\nauto - Auto (current, default)\ngpt-5.3-codex - Codex 5.3\ncomposer-2.5 - Composer 2.5\n\nTip: use --model <id> (or /model <id> in interactive mode) to switch. Parameterized models also accept quoted overrides, e.g. --model '...'.\n";

    fn plain_expected() -> Vec<CliModel> {
        vec![
            model("auto", "Auto", true, true),
            model("gpt-5.3-codex", "Codex 5.3", false, false),
            model("composer-2.5", "Composer 2.5", false, false),
        ]
    }

    #[test]
    fn model_lists() {
        let coloured = "\x1b[1mAvailable models\x1b[0m\r\n\r\n\x1b[36mauto\x1b[0m - Auto \x1b[2m(current, default)\x1b[0m\r\n\x1b]8;;https://cursor.com/models/gpt\x07gpt-5.3-codex\x1b]8;;\x07 - Codex 5.3\r\n\x1b[38;5;208mcomposer-2.5\x1b[39m - Composer 2.5\x1b\\\r\n\r\n\x1b[2mTip: use --model <id> to switch.\x1b[0m\r\n";
        let numbered = "Available models:\n  1) auto - Auto (current, default)\n  2) gpt-5.3-codex - Codex 5.3\n 10) composer-2.5 - Composer 2.5\n";
        let duplicated = "Available models\nauto - Auto (current)\ngpt-5.3-codex - Codex 5.3\nauto - Auto again (default)\ncomposer-2.5 - Composer 2.5\ngpt-5.3-codex - Codex 5.3\n";
        let cases: &[(&str, &str, Vec<CliModel>)] = &[
            ("plain", PLAIN, plain_expected()),
            ("ansi sgr + osc 8 + crlf", coloured, plain_expected()),
            ("numbered (older builds)", numbered, plain_expected()),
            ("duplicates merged, first name wins", duplicated, plain_expected()),
            (
                "names with double spaces and parentheses",
                "Available models\n\nclaude-opus-4-7-high - Claude  Opus 4.7 High (NO ZDR)\ngrok-4.6 - Grok 4.6 (NO ZDR) (default)\nkimi-k3 - Kimi K3 (preview, beta)\nx - y (current)(default)\n",
                vec![
                    model("claude-opus-4-7-high", "Claude  Opus 4.7 High (NO ZDR)", false, false),
                    model("grok-4.6", "Grok 4.6 (NO ZDR)", false, true),
                    model("kimi-k3", "Kimi K3 (preview, beta)", false, false),
                    model("x", "y", true, true),
                ],
            ),
            (
                "ids with every allowed character",
                "Available models\nacme/llm:v1.2_beta-3 - Acme\nvendor.model - Vendor (current)\n",
                vec![model("acme/llm:v1.2_beta-3", "Acme", false, false), model("vendor.model", "Vendor", true, false)],
            ),
            (
                "prose and look-alikes are not models",
                "Available models\n\nTip: use --model x\n- not - a model\nauto-Auto\nauto -Auto\n(auto) - Auto\nauto - Auto\n",
                vec![model("auto", "Auto", false, false)],
            ),
            ("empty display name falls back to the id", "auto - \nfoo - (default)\n", vec![model("auto", "auto", false, false), model("foo", "foo", false, true)]),
        ];
        for (label, input, expected) in cases {
            assert_eq!(parse_model_list(input).as_ref(), Ok(expected), "{label}");
        }
    }

    #[test]
    fn model_list_errors() {
        let cases: &[(&str, ModelListError)] = &[
            (
                "Error: Authentication required. Run 'agent login', pass --api-key/--auth-token, or set CURSOR_API_KEY/CURSOR_AUTH_TOKEN.\n",
                ModelListError::AuthRequired,
            ),
            // Anywhere, even with model lines around it.
            ("Available models\nauto - Auto\n\x1b[31mError: Authentication required.\x1b[0m\n", ModelListError::AuthRequired),
            ("No models available for this account\n", ModelListError::NoModels),
            ("Available models\n\nNo models available for this account.\n", ModelListError::NoModels),
            ("", ModelListError::Unrecognised { excerpt: String::new() }),
            (
                "\x1b[1mSomething\x1b[0m odd\n\n happened\nhere\nand here\n",
                ModelListError::Unrecognised { excerpt: "Something odd | happened | here".into() },
            ),
        ];
        for (input, expected) in cases {
            assert_eq!(parse_model_list(input), Err(expected.clone()), "{input:?}");
        }
        let garbage = "\u{0}\u{1}💥 ".repeat(200);
        match parse_model_list(&garbage) {
            Err(ModelListError::Unrecognised { excerpt }) => {
                assert_eq!(excerpt.chars().count(), EXCERPT_MAX_CHARS);
                assert!(excerpt.ends_with('…') && !excerpt.contains('\u{0}'));
            }
            other => panic!("{other:?}"),
        }
    }

    #[test]
    fn strip_ansi_sequences() {
        let cases: &[(&str, &str)] = &[
            ("plain text", "plain text"),
            ("\x1b[0m\x1b[1;32mgreen\x1b[39;49m", "green"),
            ("\x1b[?25lhidden cursor\x1b[?25h", "hidden cursor"),
            ("\x1b]8;;https://x.y/\x07link\x1b]8;;\x07", "link"),
            ("\x1b]0;title\x1b\\after", "after"),
            ("\x1b(Bcharset \x1b7saved\x1b8", "charset saved"),
            ("\u{9b}31mC1 csi\u{9b}0m", "C1 csi"),
            ("unterminated \x1b]8;;http://x\nnext line", "unterminated \nnext line"),
            ("osc interrupted \x1b]0;t\x1b[1mbold", "osc interrupted bold"),
            ("trailing esc \x1b", "trailing esc "),
            ("esc before newline \x1b\nx", "esc before newline \nx"),
            ("\x1b[", ""),
            ("ünïcode \x1b[1m✓\x1b[0m 日本", "ünïcode ✓ 日本"),
        ];
        for (input, expected) in cases {
            assert_eq!(strip_ansi(input), *expected, "{input:?}");
        }
        assert!(matches!(strip_ansi("no escapes"), Cow::Borrowed(_)));
    }

    #[test]
    fn families_and_limits() {
        // (id, family, max input, max output, known)
        let cases: &[(&str, &str, u32, u32, bool)] = &[
            ("composer-2.5", "composer", 200_000, 32_768, true),
            ("composer-2.5-fast", "composer", 200_000, 32_768, true),
            ("opus-5", "claude-opus", 300_000, 32_768, true),
            ("opus-5-thinking", "claude-opus", 300_000, 32_768, true),
            ("claude-opus-4-7-high", "claude-opus", 300_000, 32_768, true),
            ("sonnet-5", "claude-sonnet", 300_000, 32_768, true),
            ("claude-sonnet-5", "claude-sonnet", 300_000, 32_768, true),
            ("claude-4.5-sonnet-thinking", "claude-sonnet", 300_000, 32_768, true),
            ("fable-5", "claude-fable", 300_000, 32_768, true),
            ("claude-x", "claude", 300_000, 32_768, true),
            ("gpt-5.6-sol", "gpt", 272_000, 32_768, true),
            ("gpt-5.3-codex", "gpt", 272_000, 32_768, true),
            ("GPT-5.5-medium", "gpt", 272_000, 32_768, true),
            ("grok-4.6", "grok", 256_000, 32_768, true),
            ("grok-5", "grok", 256_000, 32_768, true),
            ("kimi-k3", "kimi", 200_000, 32_768, true),
            ("kimi-k2", "kimi", 128_000, 16_384, false),
            ("glm-5.2", "glm", 200_000, 32_768, true),
            ("auto", "auto", 200_000, 32_768, true),
            ("default", "auto", 200_000, 32_768, true),
            ("gemini-3.7-flash", "gemini", 128_000, 16_384, false),
            ("mystery", "mystery", 128_000, 16_384, false),
            ("", "unknown", 128_000, 16_384, false),
        ];
        for &(id, family, max_input, max_output, known) in cases {
            assert_eq!(model_family(id), family, "{id}");
            assert_eq!(
                model_limits(id),
                ModelLimits { max_input_tokens: max_input, max_output_tokens: max_output, known },
                "{id}"
            );
        }
    }

    #[test]
    fn model_info() {
        // (id, name, thinking)
        let cases: &[(&str, &str, bool)] = &[
            ("auto", "Auto", false),
            ("composer-2.5", "Composer 2.5", false),
            ("claude-4.5-sonnet-thinking", "Claude 4.5 Sonnet Thinking", true),
            ("sonnet-5", "Sonnet 5 Thinking", true),
            ("claude-opus-4-7-high", "Claude Opus 4.7 High", true),
            ("gpt-5.6-terra-xhigh", "GPT-5.6 Terra Extra High", true),
            ("claude-opus-4-7-max", "Claude Opus 4.7 Max", true),
            ("gpt-5.3-codex", "Codex 5.3", true),
            ("o3", "o3", true),
            ("grok-4.6", "Grok 4.6", false),
            ("deep-reasoning-x", "X", true),
            ("highland-1", "Highland", false),
        ];
        for &(id, name, thinking) in cases {
            let info = to_model_info(&model(id, name, false, id == "auto"));
            assert_eq!(
                info.capabilities,
                ModelCapabilities { thinking, tool_calling: true, image_input: false },
                "{id}"
            );
            assert_eq!((info.id.as_str(), info.name.as_str()), (id, name));
            assert_eq!(info.is_default, id == "auto");
            assert_eq!(info.family, model_family(id));
            assert_eq!(info.max_input_tokens, model_limits(id).max_input_tokens);
        }
        // The wire shape the editor receives.
        let json = serde_json::to_value(to_model_info(&model("auto", "Auto", true, true))).unwrap_or_default();
        assert_eq!(
            json,
            serde_json::json!({"id":"auto","name":"Auto","family":"auto","maxInputTokens":200000,"maxOutputTokens":32768,
                "capabilities":{"thinking":false,"toolCalling":true,"imageInput":false},"isDefault":true})
        );
    }
}
