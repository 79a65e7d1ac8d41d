//! Which of the CLI's flat model SKUs belong together. Cursor lists every variant as a model of its
//! own (`gpt-5.5`, `gpt-5.5-high`, `gpt-5.5-high-fast`, `claude-opus-4-8-thinking`,
//! `composer-2.5-fast`, about a hundred on a paid account; docs/cursor-cli.md §7.1); an editor
//! wants one entry per base model with the variant as a menu. This module reads the grouping from
//! the names, for any backend that has only names (print mode); the ACP backend can take the same
//! fields from its config options instead.
//!
//! Rules (the CLI documents none; they follow the ids seen, see
//! `tests/fixtures/models/skus.txt`):
//! * An id is `<base>-<axis>…`: trailing dash-separated words that name an axis are peeled off,
//!   right to left, each axis at most once: an effort (`minimal`, `low`, `medium`, `high`,
//!   `xhigh`, `max`), `fast`, `thinking`. The first word always stays (`high` alone is a model).
//! * The display name loses the same words at its end (`Extra High` for `xhigh`), before any
//!   trailing parenthesised note such as `(NO ZDR)`, which stays.
//! * A base's default variant is the CLI's: the bare id when it is listed, else the one the CLI
//!   marks `(default)` or `(current)`, else the first listed. Its name is the base's name.
//! * A SKU with no sibling is a base of its own, under its own id and name.

use crate::vocab::{ModelBase, ModelInfo, ModelVariant};

/// Effort words as they appear in ids, in increasing order, with the label a menu shows.
pub const EFFORTS: &[(&str, &str)] = &[
    ("minimal", "Minimal"),
    ("low", "Low"),
    ("medium", "Medium"),
    ("high", "High"),
    ("xhigh", "Extra High"),
    ("max", "Max"),
];

/// What one id says about itself.
#[derive(Debug, Clone, PartialEq, Eq, Default)]
pub struct Sku {
    pub base: String,
    pub effort: Option<&'static str>,
    pub fast: bool,
    pub thinking: bool,
}

pub fn parse(id: &str) -> Sku {
    let words: Vec<&str> = id.split('-').collect();
    let mut sku = Sku::default();
    let mut keep = words.len();
    while keep > 1 {
        let word = words[keep - 1].to_ascii_lowercase();
        let effort = EFFORTS.iter().find(|(w, _)| *w == word).map(|(w, _)| *w);
        match (word.as_str(), effort) {
            (_, Some(e)) if sku.effort.is_none() => sku.effort = Some(e),
            ("fast", _) if !sku.fast => sku.fast = true,
            ("thinking", _) if !sku.thinking => sku.thinking = true,
            _ => break,
        }
        keep -= 1;
    }
    sku.base = words[..keep].join("-");
    sku
}

/// The display name without the words of the axes `sku` has (`GPT-5.5 High Fast` → `GPT-5.5`).
pub fn base_name(name: &str, sku: &Sku) -> String {
    // A trailing `(NO ZDR)`-style note stays where it is.
    let (head, note) = match name.trim_end().strip_suffix(')').and_then(|n| n.rfind('(')) {
        Some(open) => (&name[..open], name[open..].trim_end()),
        None => (name, ""),
    };
    let mut words: Vec<&str> = head.split(' ').collect();
    while words.last() == Some(&"") {
        words.pop();
    }
    let ends_with = |words: &[&str], tail: &[&str]| {
        words.len() > tail.len()
            && words[words.len() - tail.len()..].iter().zip(tail).all(|(a, b)| a.eq_ignore_ascii_case(b))
    };
    let mut axes: Vec<Vec<&str>> = Vec::new();
    if let Some(label) = sku.effort.and_then(|e| EFFORTS.iter().find(|(w, _)| *w == e)).map(|(_, l)| *l) {
        axes.push(label.split(' ').collect());
        if sku.effort == Some("xhigh") {
            axes.push(vec!["XHigh"]);
        }
    }
    if sku.fast {
        axes.push(vec!["Fast"]);
    }
    if sku.thinking {
        axes.push(vec!["Thinking"]);
    }
    // Peel in any order, each axis once.
    let before = words.len();
    let mut peeled = true;
    while peeled {
        peeled = false;
        for i in 0..axes.len() {
            if ends_with(&words, &axes[i]) {
                words.truncate(words.len() - axes[i].len());
                axes.remove(i);
                peeled = true;
                break;
            }
        }
    }
    let head = words.join(" ");
    let head = head.trim_end();
    if head.is_empty() || words.len() == before {
        return name.to_owned();
    }
    if note.is_empty() {
        head.to_owned()
    } else {
        format!("{head} {note}")
    }
}

/// A variant's menu label: `High · Fast`, `Thinking`, or `Standard` for the plain one (also in a
/// base with efforts: the bare SKU runs the CLI's own default effort, which the CLI does not name,
/// and VS Code marks the default entry "Default" itself).
pub fn label(sku: &Sku, base_has_effort: bool) -> String {
    let mut parts: Vec<&str> = Vec::new();
    match sku.effort.and_then(|e| EFFORTS.iter().find(|(w, _)| *w == e)) {
        Some((_, l)) => parts.push(l),
        None if base_has_effort => parts.push("Standard"),
        None => {}
    }
    if sku.fast {
        parts.push("Fast");
    }
    if sku.thinking {
        parts.push("Thinking");
    }
    if parts.is_empty() {
        "Standard".to_owned()
    } else {
        parts.join(" · ")
    }
}

/// Listed models, each told its base and variant (`is_marked`: the CLI's `(default)`/`(current)`
/// marker of that model).
pub fn group(models: Vec<ModelInfo>, is_marked: impl Fn(&ModelInfo) -> bool) -> Vec<ModelInfo> {
    let skus: Vec<Sku> = models.iter().map(|m| parse(&m.id)).collect();
    let mut out = models.clone();
    let mut done: Vec<&str> = Vec::new();
    for (i, sku) in skus.iter().enumerate() {
        if done.contains(&sku.base.as_str()) {
            continue;
        }
        done.push(&sku.base);
        let members: Vec<usize> = (0..skus.len()).filter(|&j| skus[j].base == sku.base).collect();
        let bare = members.iter().copied().find(|&j| models[j].id == sku.base);
        let default = bare.or_else(|| members.iter().copied().find(|&j| is_marked(&models[j]))).unwrap_or(i);
        let name = match bare {
            Some(j) => models[j].name.clone(),
            None => base_name(&models[default].name, &skus[default]),
        };
        let has_effort = members.iter().any(|&j| skus[j].effort.is_some());
        // A SKU without siblings is its own base: its id and name stay as the CLI lists them
        // (`sonnet-5-thinking` alone is not "Claude Sonnet 5").
        let (base_id, name) = match members.as_slice() {
            [only] => (models[*only].id.clone(), models[*only].name.clone()),
            _ => (sku.base.clone(), name),
        };
        for &j in &members {
            let s = &skus[j];
            out[j].base = Some(ModelBase { id: base_id.clone(), name: name.clone() });
            out[j].variant = Some(ModelVariant {
                effort: s.effort.map(str::to_owned),
                fast: s.fast,
                thinking: s.thinking,
                label: label(s, has_effort),
                default: j == default,
            });
        }
    }
    out
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::vocab::ModelCapabilities;

    const FIXTURE: &str = include_str!("../../../tests/fixtures/models/skus.txt");

    fn info(id: &str, name: &str) -> ModelInfo {
        ModelInfo {
            id: id.into(),
            name: name.into(),
            family: "x".into(),
            max_input_tokens: 1,
            max_output_tokens: 1,
            capabilities: ModelCapabilities { thinking: false, tool_calling: true, image_input: false },
            is_default: false,
            base: None,
            variant: None,
        }
    }

    #[test]
    fn real_sku_names_split_into_base_and_axes() {
        let mut seen = 0;
        for line in FIXTURE.lines().filter(|l| !l.starts_with('#') && !l.trim().is_empty()) {
            let cols: Vec<&str> = line.split(" | ").map(|c| c.trim_end_matches(" |")).collect();
            let (id, name, base, base_display) = (cols[0], cols[1], cols[2], cols[3]);
            let axes = cols.get(4).copied().unwrap_or("").trim();
            let sku = parse(id);
            let mut expected = Sku { base: base.into(), ..Sku::default() };
            for axis in axes.split_whitespace() {
                match axis.strip_prefix("effort=") {
                    Some(e) => expected.effort = EFFORTS.iter().find(|(w, _)| *w == e).map(|(w, _)| *w),
                    None if axis == "fast" => expected.fast = true,
                    None if axis == "thinking" => expected.thinking = true,
                    None => panic!("fixture: unknown axis {axis:?} in {line:?}"),
                }
            }
            assert_eq!(sku, expected, "{line}");
            assert_eq!(base_name(name, &sku), base_display, "{line}");
            seen += 1;
        }
        assert!(seen >= 30, "the fixture has {seen} lines");
    }

    #[test]
    fn a_group_has_one_default_the_bare_id_or_the_marked_one() {
        let listed = vec![
            info("gpt-5.5-high", "GPT-5.5 High"),
            info("gpt-5.5", "GPT-5.5"),
            info("gpt-5.5-high-fast", "GPT-5.5 High Fast"),
            info("grok-4.5-high", "Grok 4.5 High"),
            info("grok-4.5-low", "Grok 4.5 Low"),
            info("o3-mini-high", "o3 mini High"),
            info("o3-mini-low", "o3 mini Low"),
            info("sonnet-5-thinking", "Claude Sonnet 5 Thinking"),
        ];
        let grouped = group(listed, |m| m.id == "grok-4.5-low");
        let row = |id: &str| {
            let m = grouped.iter().find(|m| m.id == id).unwrap();
            let (b, v) = (m.base.clone().unwrap(), m.variant.clone().unwrap());
            (b.id, b.name, v.label, v.default)
        };
        // (id, base, base name, label, default)
        let cases = [
            ("gpt-5.5", "gpt-5.5", "GPT-5.5", "Standard", true),
            ("gpt-5.5-high", "gpt-5.5", "GPT-5.5", "High", false),
            ("gpt-5.5-high-fast", "gpt-5.5", "GPT-5.5", "High · Fast", false),
            ("grok-4.5-low", "grok-4.5", "Grok 4.5", "Low", true),
            ("grok-4.5-high", "grok-4.5", "Grok 4.5", "High", false),
            ("o3-mini-high", "o3-mini", "o3 mini", "High", true),
            ("sonnet-5-thinking", "sonnet-5-thinking", "Claude Sonnet 5 Thinking", "Thinking", true),
        ];
        for (id, base, name, label, default) in cases {
            assert_eq!(row(id), (base.into(), name.into(), label.into(), default), "{id}");
        }
        // The listing order is kept and nothing is dropped.
        assert_eq!(grouped.len(), 8);
        assert_eq!(grouped[0].id, "gpt-5.5-high");
        assert_eq!(label(&parse("composer-2.5"), false), "Standard");
    }
}
