//! The ACP model catalogue, derived deterministically from the print-mode catalogue (models.rs, or
//! `CURSOR_DOUBLE_MODELS_FILE`), so one list drives both modes while their ids stay different, as
//! they are in the real CLI (ACP accepts only its own wire ids; print-mode slugs are rejected).
//!
//! Mapping (README "ACP mode", *invented* rules modelled on the observed ids):
//! * `auto` → `default[]` ("Auto");
//! * a slug ending in `-fast` / `-thinking` is a variant of the base without that suffix, with
//!   `fast=true` / `thinking=true`; the other variants of a base with such a sibling get `=false`;
//! * a display name ending in ` 1M` adds `context=1m` (its base offers `300k` and `1m`);
//! * legacy wire id = `base[k=v,…]` with the keys in the order thinking, context, fast — one per
//!   slug, duplicates removed — e.g. `composer-2.5` → `composer-2.5[fast=false]`,
//!   `composer-2.5-fast` → `composer-2.5[fast=true]`, `opus-5` → `opus-5[]`;
//! * parameterized picker (`_meta.parameterizedModelPicker`): the model values are the bases,
//!   and the current base brings its own selects: `thinking`, `context`, `effort` (every base but
//!   `default`; category `thought_level`) and `fast`, in that order.

use crate::json::{arr, obj, Json};
use crate::models::{base_id, Catalogue};

#[derive(Clone, Debug, PartialEq, Eq)]
pub struct Variant {
    /// The print-mode id.
    pub slug: String,
    pub base: String,
    pub name: String,
    /// `(key, value)` in wire order.
    pub params: Vec<(&'static str, String)>,
}

impl Variant {
    pub fn wire(&self) -> String {
        let inner: Vec<String> = self.params.iter().map(|(k, v)| format!("{k}={v}")).collect();
        format!("{}[{}]", self.base, inner.join(","))
    }
}

#[derive(Clone, Debug, PartialEq, Eq)]
pub struct Param {
    pub key: &'static str,
    pub values: Vec<&'static str>,
    pub default: String,
}

#[derive(Clone, Debug, PartialEq, Eq)]
pub struct Base {
    pub id: String,
    pub name: String,
    /// The selects of the parameterized picker, in wire order.
    pub params: Vec<Param>,
}

#[derive(Clone, Debug)]
pub struct AcpCatalogue {
    pub variants: Vec<Variant>,
    pub bases: Vec<Base>,
}

/// The model state of one session: the `model` option's value plus, with the parameterized
/// picker, the values of the base's own selects.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct ModelState {
    pub value: String,
    pub extras: Vec<(&'static str, String)>,
}

const BOOL_VALUES: [&str; 2] = ["false", "true"];
const CONTEXT_VALUES: [&str; 2] = ["300k", "1m"];
const EFFORT_VALUES: [&str; 3] = ["low", "medium", "high"];

fn split(slug: &str) -> (String, Option<&'static str>) {
    if slug == "auto" {
        return ("default".to_owned(), None);
    }
    if let Some(base) = slug.strip_suffix("-fast") {
        return (base.to_owned(), Some("fast"));
    }
    if let Some(base) = slug.strip_suffix("-thinking") {
        return (base.to_owned(), Some("thinking"));
    }
    (slug.to_owned(), None)
}

fn strip_word(name: &str) -> String {
    for w in [" Fast", " Thinking"] {
        if let Some(n) = name.strip_suffix(w) {
            return n.to_owned();
        }
    }
    name.to_owned()
}

impl AcpCatalogue {
    pub fn from_print(c: &Catalogue) -> AcpCatalogue {
        // Slugs in listing order, without repeats; `auto` always first (ACP always offers Auto).
        let mut slugs: Vec<(String, String)> = vec![("auto".to_owned(), "Auto".to_owned())];
        if !c.empty {
            for m in &c.models {
                if !slugs.iter().any(|(s, _)| *s == m.id) {
                    slugs.push((m.id.clone(), m.name.clone()));
                }
            }
        }
        let split_all: Vec<(String, String, String, Option<&'static str>)> = slugs
            .iter()
            .map(|(slug, name)| {
                let (base, flag) = split(slug);
                (slug.clone(), name.clone(), base, flag)
            })
            .collect();
        let mut bases: Vec<Base> = Vec::new();
        for (slug, name, base, flag) in &split_all {
            if bases.iter().any(|b| b.id == *base) {
                continue;
            }
            let group: Vec<_> = split_all.iter().filter(|v| v.2 == *base).collect();
            let first = group[0];
            let has = |f: &str| group.iter().any(|v| v.3 == Some(f));
            let first_is = |f: &str| if first.3 == Some(f) { "true" } else { "false" };
            let mut params = Vec::new();
            if has("thinking") {
                params.push(Param {
                    key: "thinking",
                    values: BOOL_VALUES.to_vec(),
                    default: first_is("thinking").to_owned(),
                });
            }
            if group.iter().any(|v| v.1.ends_with(" 1M")) {
                let d = if first.1.ends_with(" 1M") { "1m" } else { "300k" };
                params.push(Param { key: "context", values: CONTEXT_VALUES.to_vec(), default: d.to_owned() });
            }
            if base != "default" {
                params.push(Param { key: "effort", values: EFFORT_VALUES.to_vec(), default: "medium".to_owned() });
            }
            if has("fast") {
                params.push(Param { key: "fast", values: BOOL_VALUES.to_vec(), default: first_is("fast").to_owned() });
            }
            let plain = group.iter().find(|v| v.3.is_none());
            let base_name = match plain {
                Some(p) => p.1.clone(),
                None => strip_word(name),
            };
            let _ = (slug, flag);
            bases.push(Base { id: base.clone(), name: base_name, params });
        }
        let variants = split_all
            .iter()
            .map(|(slug, name, base, flag)| {
                let b = bases.iter().find(|b| b.id == *base).expect("base exists");
                let mut params = Vec::new();
                for p in &b.params {
                    let v = match p.key {
                        "thinking" | "fast" => {
                            if *flag == Some(p.key) {
                                "true"
                            } else {
                                "false"
                            }
                        }
                        "context" => {
                            if name.ends_with(" 1M") {
                                "1m"
                            } else {
                                "300k"
                            }
                        }
                        _ => continue, // effort is not part of legacy ids
                    };
                    params.push((p.key, v.to_owned()));
                }
                Variant { slug: slug.clone(), base: base.clone(), name: name.clone(), params }
            })
            .collect();
        AcpCatalogue { variants, bases }
    }

    fn base(&self, id: &str) -> Option<&Base> {
        self.bases.iter().find(|b| b.id == id)
    }

    /// Whether `value` is one of the `model` option's values.
    pub fn is_value(&self, value: &str, parameterized: bool) -> bool {
        if parameterized {
            self.base(value).is_some()
        } else {
            self.variants.iter().any(|v| v.wire() == value)
        }
    }

    fn defaults(&self, base: &str) -> Vec<(&'static str, String)> {
        self.base(base).map(|b| b.params.iter().map(|p| (p.key, p.default.clone())).collect()).unwrap_or_default()
    }

    /// The state after choosing `value` (a listed value, or an unlisted one the soft-reject knob
    /// lets through): the base's selects start at their defaults.
    pub fn state_for(&self, value: &str, parameterized: bool) -> ModelState {
        ModelState { value: value.to_owned(), extras: if parameterized { self.defaults(value) } else { Vec::new() } }
    }

    /// The initial model: Auto, or the launch `--model` (a print-mode slug, already validated
    /// against the print catalogue) mapped onto its wire id / base. With the parameterized
    /// picker, the variant's own params and the slug's bracket overrides (`[effort=high]`) set the
    /// base's selects when they name one with a valid value.
    pub fn initial(&self, launch_model: Option<&str>, parameterized: bool) -> ModelState {
        let requested = launch_model.unwrap_or("auto");
        let slug = base_id(requested);
        let variant = self.variants.iter().find(|v| v.slug == slug).unwrap_or(&self.variants[0]);
        if !parameterized {
            return self.state_for(&variant.wire(), false);
        }
        let mut state = self.state_for(&variant.base, true);
        let overrides = requested.split_once('[').map(|(_, rest)| rest.trim_end_matches(']')).unwrap_or("");
        let pairs = variant.params.iter().map(|(k, v)| (k.to_string(), v.clone())).chain(
            overrides
                .split(',')
                .filter_map(|kv| kv.split_once('=').map(|(k, v)| (k.trim().to_owned(), v.trim().to_owned()))),
        );
        for (k, v) in pairs {
            let _ = self.set_extra(&mut state, &k, &v);
        }
        state
    }

    /// Sets one of the base's selects. Err: the option does not exist for this model, or the
    /// value is not one of its values.
    pub fn set_extra(&self, state: &mut ModelState, key: &str, value: &str) -> Result<(), ExtraError> {
        let base = self.base(&state.value).ok_or(ExtraError::UnknownOption)?;
        let param = base.params.iter().find(|p| p.key == key).ok_or(ExtraError::UnknownOption)?;
        if !param.values.contains(&value) {
            return Err(ExtraError::BadValue);
        }
        if let Some(slot) = state.extras.iter_mut().find(|(k, _)| *k == key) {
            slot.1 = value.to_owned();
        }
        Ok(())
    }

    /// The model the turn runs on, as a full wire id (`base[k=v,…]`).
    pub fn effective(&self, state: &ModelState, parameterized: bool) -> String {
        if !parameterized || self.base(&state.value).is_none() {
            return state.value.clone();
        }
        let inner: Vec<String> = state.extras.iter().map(|(k, v)| format!("{k}={v}")).collect();
        format!("{}[{}]", state.value, inner.join(","))
    }

    fn model_options(&self, parameterized: bool) -> Vec<(String, String)> {
        if parameterized {
            self.bases.iter().map(|b| (b.id.clone(), b.name.clone())).collect()
        } else {
            self.variants.iter().map(|v| (v.wire(), v.name.clone())).collect()
        }
    }

    /// The `configOptions` array: mode, model, then the current base's selects.
    pub fn config_options(&self, mode: &str, state: &ModelState, parameterized: bool) -> Json {
        let mut items = vec![mode_option(mode), {
            let options = self
                .model_options(parameterized)
                .into_iter()
                .map(|(value, name)| obj([("value", value.into()), ("name", name.into())]));
            obj([
                ("id", "model".into()),
                ("name", "Model".into()),
                ("category", "model".into()),
                ("type", "select".into()),
                ("currentValue", state.value.as_str().into()),
                ("options", arr(options)),
            ])
        }];
        if parameterized {
            items.extend(self.extra_options(&state.value, &state.extras));
        }
        Json::Arr(items)
    }

    fn extra_options(&self, base: &str, values: &[(&'static str, String)]) -> Vec<Json> {
        let Some(b) = self.base(base) else {
            return Vec::new();
        };
        b.params
            .iter()
            .map(|p| {
                let current = values.iter().find(|(k, _)| *k == p.key).map_or(p.default.clone(), |(_, v)| v.clone());
                let (name, category) = match p.key {
                    "thinking" => ("Thinking", "model_config"),
                    "context" => ("Context", "model_config"),
                    "effort" => ("Effort", "thought_level"),
                    _ => ("Fast", "model_config"),
                };
                let options = p.values.iter().map(|v| {
                    let label = match *v {
                        "false" => "Off".to_owned(),
                        "true" => "On".to_owned(),
                        "300k" => "300K".to_owned(),
                        "1m" => "1M".to_owned(),
                        other => {
                            let mut c = other.chars();
                            c.next().map(|f| f.to_uppercase().collect::<String>() + c.as_str()).unwrap_or_default()
                        }
                    };
                    obj([("value", (*v).into()), ("name", label.into())])
                });
                obj([
                    ("id", p.key.into()),
                    ("name", name.into()),
                    ("category", category.into()),
                    ("type", "select".into()),
                    ("currentValue", current.into()),
                    ("options", arr(options)),
                ])
            })
            .collect()
    }

    /// The legacy `models` object of `session/new`.
    pub fn legacy_models(&self, state: &ModelState, parameterized: bool) -> Json {
        let available = self
            .model_options(parameterized)
            .into_iter()
            .map(|(value, name)| obj([("modelId", value.into()), ("name", name.into())]));
        obj([("currentModelId", state.value.as_str().into()), ("availableModels", arr(available))])
    }

    /// `cursor/list_available_models` entries; with the parameterized picker each base carries
    /// its selects (at their defaults).
    pub fn list(&self, parameterized: bool) -> Json {
        if !parameterized {
            return arr(self
                .variants
                .iter()
                .map(|v| obj([("value", v.wire().into()), ("name", v.name.as_str().into())])));
        }
        arr(self.bases.iter().map(|b| {
            let mut entry = obj([("value", b.id.as_str().into()), ("name", b.name.as_str().into())]);
            let extras = self.extra_options(&b.id, &[]);
            if !extras.is_empty() {
                entry.set("configOptions", Json::Arr(extras));
            }
            entry
        }))
    }
}

#[derive(Debug, PartialEq, Eq)]
pub enum ExtraError {
    UnknownOption,
    BadValue,
}

pub const MODES: [(&str, &str, &str); 3] = [
    ("agent", "Agent", "Full access: reads, edits and runs commands"),
    ("plan", "Plan", "Read-only: researches and proposes a plan before changing anything"),
    ("ask", "Ask", "Read-only: answers questions without changing files"),
];

pub fn is_mode(id: &str) -> bool {
    MODES.iter().any(|(m, _, _)| *m == id)
}

/// The `modes` object of `session/new` / `session/load`.
pub fn modes(current: &str) -> Json {
    obj([
        ("currentModeId", current.into()),
        (
            "availableModes",
            arr(MODES.iter().map(|(id, name, description)| {
                obj([("id", (*id).into()), ("name", (*name).into()), ("description", (*description).into())])
            })),
        ),
    ])
}

fn mode_option(current: &str) -> Json {
    obj([
        ("id", "mode".into()),
        ("name", "Mode".into()),
        ("category", "mode".into()),
        ("type", "select".into()),
        ("currentValue", current.into()),
        (
            "options",
            arr(MODES.iter().map(|(id, name, description)| {
                obj([("value", (*id).into()), ("name", (*name).into()), ("description", (*description).into())])
            })),
        ),
    ])
}

#[cfg(test)]
mod tests {
    use super::*;

    fn builtin() -> AcpCatalogue {
        AcpCatalogue::from_print(&Catalogue { models: crate::models::builtin(), verbatim: None, empty: false })
    }

    #[test]
    fn legacy_wire_ids_follow_the_mapping() {
        let c = builtin();
        let wires: Vec<(String, String)> = c.variants.iter().map(|v| (v.slug.clone(), v.wire())).collect();
        let expect = [
            ("auto", "default[]"),
            ("composer-2.5", "composer-2.5[fast=false]"),
            ("composer-2.5-fast", "composer-2.5[fast=true]"),
            ("sonnet-5-thinking", "sonnet-5[thinking=true]"),
            ("opus-5", "opus-5[]"),
            ("claude-opus-4-8", "claude-opus-4-8[context=1m]"),
            ("gpt-5.6-sol", "gpt-5.6-sol[]"),
            ("grok-4.6", "grok-4.6[]"),
            ("gemini-3.7-flash", "gemini-3.7-flash[]"),
            ("kimi-k2.5", "kimi-k2.5[]"),
        ];
        assert_eq!(wires, expect.map(|(a, b)| (a.to_owned(), b.to_owned())).to_vec());
        assert!(c.is_value("composer-2.5[fast=true]", false));
        assert!(!c.is_value("composer-2.5", false) && !c.is_value("auto", false));
        assert!(c.is_value("composer-2.5", true) && !c.is_value("composer-2.5[fast=true]", true));
    }

    #[test]
    fn parameterized_bases_and_selects() {
        let c = builtin();
        let ids: Vec<&str> = c.bases.iter().map(|b| b.id.as_str()).collect();
        assert_eq!(
            ids,
            [
                "default",
                "composer-2.5",
                "sonnet-5",
                "opus-5",
                "claude-opus-4-8",
                "gpt-5.6-sol",
                "grok-4.6",
                "gemini-3.7-flash",
                "kimi-k2.5"
            ]
        );
        assert_eq!(c.bases[2].name, "Claude Sonnet 5");
        let mut s = c.initial(Some("composer-2.5-fast[effort=high]"), true);
        assert_eq!(c.effective(&s, true), "composer-2.5[effort=high,fast=true]");
        assert_eq!(c.set_extra(&mut s, "fast", "maybe"), Err(ExtraError::BadValue));
        assert_eq!(c.set_extra(&mut s, "context", "1m"), Err(ExtraError::UnknownOption));
        let o = c.initial(Some("claude-opus-4-8"), true);
        assert_eq!(c.effective(&o, true), "claude-opus-4-8[context=1m,effort=medium]");
        assert_eq!(c.effective(&c.initial(None, true), true), "default[]");
        assert_eq!(c.initial(Some("opus-5"), false).value, "opus-5[]");
    }
}
