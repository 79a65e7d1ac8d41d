//! Which ACP model value serves a client's model id. Clients pick from the CLI's own list
//! (`agent models`: `composer-2.5-fast`, `sonnet-5-thinking`, `auto`), the stable id set every
//! backend shares; ACP accepts only the exact values of its own catalogue (`composer-2.5[fast=true]`,
//! `default[]`) and rejects anything else with -32602 (docs/cursor-acp.md §5). So a value is
//! always copied from the advertised options, never built by string surgery: the client id is
//! matched to an option by exact value, then by display name, then by its base and parameters.

use serde_json::Value;

/// One model option as ACP advertised it.
#[derive(Debug, Clone, PartialEq)]
pub struct ModelOption {
    pub value: String,
    pub name: String,
}

/// The model part of a session's configuration: the `model` select's options and current value,
/// plus the extra selects of the parameterized picker (effort, fast, thinking, context).
#[derive(Debug, Clone, Default, PartialEq)]
pub struct ModelConfig {
    pub current: Option<String>,
    pub options: Vec<ModelOption>,
    /// `(configId, currentValue, allowed values)` of selects other than `mode` and `model`.
    pub extras: Vec<(String, String, Vec<String>)>,
    pub current_mode: Option<String>,
}

impl ModelConfig {
    /// From a `session/new`/`load`/`set_config_option` result: `configOptions` first, the legacy
    /// `models` object when there are none (older builds), `modes` for the current mode.
    pub fn parse(result: &Value) -> ModelConfig {
        let mut config = ModelConfig::default();
        for option in result.get("configOptions").and_then(Value::as_array).into_iter().flatten() {
            let id = option.get("id").and_then(Value::as_str).unwrap_or("");
            let current = option.get("currentValue").and_then(Value::as_str).map(str::to_owned);
            let values = select_values(option);
            match (id, option.get("category").and_then(Value::as_str)) {
                ("mode", _) | (_, Some("mode")) => config.current_mode = current,
                ("model", _) | (_, Some("model")) => {
                    config.current = current;
                    config.options = values;
                }
                _ if option.get("type").and_then(Value::as_str) == Some("select") => {
                    let allowed = values.into_iter().map(|o| o.value).collect();
                    config.extras.push((id.to_owned(), current.unwrap_or_default(), allowed));
                }
                _ => {}
            }
        }
        if config.options.is_empty() {
            if let Some(models) = result.get("models") {
                config.current = models.get("currentModelId").and_then(Value::as_str).map(str::to_owned);
                config.options = models
                    .get("availableModels")
                    .and_then(Value::as_array)
                    .into_iter()
                    .flatten()
                    .filter_map(|m| {
                        let value = m.get("modelId").and_then(Value::as_str)?;
                        let name = m.get("name").and_then(Value::as_str).unwrap_or(value);
                        Some(ModelOption { value: value.to_owned(), name: name.to_owned() })
                    })
                    .collect();
            }
        }
        if config.current_mode.is_none() {
            config.current_mode = result.pointer("/modes/currentModeId").and_then(Value::as_str).map(str::to_owned);
        }
        config
    }
}

impl ModelConfig {
    /// From `cursor/list_available_models`' `{models: [{value, name}]}` (no current values).
    pub fn from_model_list(result: &Value) -> ModelConfig {
        let options = result
            .get("models")
            .and_then(Value::as_array)
            .into_iter()
            .flatten()
            .filter_map(|m| {
                let value = m.get("value").and_then(Value::as_str)?;
                let name = m.get("name").and_then(Value::as_str).unwrap_or(value);
                Some(ModelOption { value: value.to_owned(), name: name.to_owned() })
            })
            .collect();
        ModelConfig { options, ..ModelConfig::default() }
    }

    /// This session's state with `known`'s catalogue where the session's answer had none
    /// (`session/load` may answer `{}`: ACP v1 makes `configOptions` optional).
    pub fn or_catalogue(&self, known: &ModelConfig) -> ModelConfig {
        if !self.options.is_empty() {
            return self.clone();
        }
        let extras = if self.extras.is_empty() { known.extras.clone() } else { self.extras.clone() };
        ModelConfig { options: known.options.clone(), extras, ..self.clone() }
    }
}

/// A select's options, flat or grouped (`options: [{group, options: […]}]`).
fn select_values(option: &Value) -> Vec<ModelOption> {
    fn walk(items: &[Value], out: &mut Vec<ModelOption>) {
        for item in items {
            if let Some(value) = item.get("value").and_then(Value::as_str) {
                let name = item.get("name").and_then(Value::as_str).unwrap_or(value);
                out.push(ModelOption { value: value.to_owned(), name: name.to_owned() });
            } else if let Some(inner) = item.get("options").and_then(Value::as_array) {
                walk(inner, out);
            }
        }
    }
    let mut out = Vec::new();
    walk(option.get("options").and_then(Value::as_array).map(Vec::as_slice).unwrap_or(&[]), &mut out);
    out
}

/// What to set for a client's model id: the `model` value, then extra selects to set after it.
#[derive(Debug, Clone, PartialEq)]
pub struct Choice {
    pub value: String,
    pub extras: Vec<(String, String)>,
}

/// `id`: the client's model id; `display`: its display name in the CLI's list, when known.
pub fn choose(config: &ModelConfig, id: &str, display: Option<&str>) -> Option<Choice> {
    let plain = |value: &str| Some(Choice { value: value.to_owned(), extras: Vec::new() });
    // 1. A value of the catalogue itself (a client that knows ACP's ids).
    if let Some(o) = config.options.iter().find(|o| o.value == id) {
        return plain(&o.value);
    }
    let wanted = Sku::parse(id);
    // 2. Auto is `default[]` (shown as "Auto").
    if wanted.base == "auto" || wanted.base == "default" {
        return config.options.iter().find(|o| Sku::parse(&o.value).base == "default").and_then(|o| plain(&o.value));
    }
    // 3. The same display name (the legacy picker names options as the CLI's list does).
    if let Some(display) = display.map(str::trim).filter(|d| !d.is_empty()) {
        if let Some(o) = config.options.iter().find(|o| o.name.trim().eq_ignore_ascii_case(display)) {
            return plain(&o.value);
        }
    }
    // 4. Base and parameters: the option of that base whose parameters agree with the id's,
    //    preferring the one that switches on nothing the id did not ask for.
    let mut best: Option<(usize, &ModelOption, Sku)> = None;
    for o in &config.options {
        let have = Sku::parse(&o.value);
        if have.base != wanted.base {
            continue;
        }
        let conflicts = wanted.params.iter().any(|(k, v)| have.get(k).is_some_and(|h| h != v));
        if conflicts {
            continue;
        }
        let extra_on = have.params.iter().filter(|(k, v)| v == "true" && wanted.get(k).is_none()).count();
        let missing = wanted.params.iter().filter(|(k, _)| have.get(k).is_none()).count();
        let score = extra_on * 10 + missing;
        if best.as_ref().is_none_or(|(s, _, _)| score < *s) {
            best = Some((score, o, have));
        }
    }
    let (_, option, have) = best?;
    // Parameters the value does not carry are the parameterized picker's selects.
    let extras = wanted
        .params
        .iter()
        .filter(|(k, _)| have.get(k).is_none())
        .filter_map(|(k, v)| {
            let (id, _, allowed) = config.extras.iter().find(|(id, _, _)| id == k)?;
            allowed.iter().any(|a| a == v).then(|| (id.clone(), v.clone()))
        })
        .collect::<Vec<_>>();
    let unserved = wanted.params.iter().any(|(k, _)| have.get(k).is_none() && !extras.iter().any(|(e, _)| e == k));
    if unserved && !wanted.params.iter().all(|(_, v)| v == "false") {
        return None;
    }
    Some(Choice { value: option.value.clone(), extras })
}

/// A model id as base + parameters: `composer-2.5[fast=true]` (ACP) or `composer-2.5-fast`,
/// `gpt-5.5-high-fast`, `sonnet-5-thinking` (the CLI's slugs: suffixes for fast, thinking and
/// reasoning effort).
#[derive(Debug, Clone, PartialEq)]
struct Sku {
    base: String,
    params: Vec<(String, String)>,
}

const EFFORTS: &[&str] = &["minimal", "low", "medium", "high", "xhigh", "max"];

impl Sku {
    fn parse(id: &str) -> Sku {
        let id = id.trim();
        if let Some((base, rest)) = id.split_once('[') {
            let params = rest
                .trim_end_matches(']')
                .split(',')
                .filter_map(|kv| kv.split_once('='))
                .map(|(k, v)| (k.trim().to_owned(), v.trim().to_owned()))
                .collect();
            return Sku { base: base.to_owned(), params };
        }
        let mut base = id.to_owned();
        let mut params = Vec::new();
        while let Some((head, tail)) = base.rsplit_once('-') {
            let param = match tail {
                "fast" => ("fast", "true".to_owned()),
                "thinking" => ("thinking", "true".to_owned()),
                e if EFFORTS.contains(&e) => ("effort", e.to_owned()),
                _ => break,
            };
            if params.iter().any(|(k, _)| k == param.0) {
                break;
            }
            params.push((param.0.to_owned(), param.1));
            base = head.to_owned();
        }
        params.reverse();
        Sku { base, params }
    }

    fn get(&self, key: &str) -> Option<&str> {
        self.params.iter().find(|(k, _)| k == key).map(|(_, v)| v.as_str())
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use serde_json::json;

    fn legacy() -> ModelConfig {
        ModelConfig::parse(&json!({
            "sessionId": "S",
            "modes": {"currentModeId": "agent", "availableModes": []},
            "configOptions": [
                {"id": "mode", "name": "Mode", "category": "mode", "type": "select", "currentValue": "agent",
                 "options": [{"value": "agent", "name": "Agent"}, {"value": "ask", "name": "Ask"}]},
                {"id": "model", "name": "Model", "category": "model", "type": "select", "currentValue": "composer-2.5[fast=true]",
                 "options": [
                    {"value": "default[]", "name": "Auto"},
                    {"value": "composer-2.5[fast=false]", "name": "Composer 2.5"},
                    {"value": "composer-2.5[fast=true]", "name": "Composer 2.5 Fast"},
                    {"value": "sonnet-5[thinking=false]", "name": "Sonnet 5"},
                    {"value": "sonnet-5[thinking=true]", "name": "Sonnet 5 Thinking"},
                    {"value": "claude-opus-4-8[context=1m]", "name": "Claude Opus 4.8 1M"},
                    {"value": "gpt-5.6-sol[]", "name": "GPT-5.6 Sol"}
                 ]}
            ]
        }))
    }

    #[test]
    fn client_ids_map_to_exact_catalogue_values() {
        let c = legacy();
        assert_eq!(c.current.as_deref(), Some("composer-2.5[fast=true]"));
        assert_eq!(c.current_mode.as_deref(), Some("agent"));
        let cases = [
            ("auto", None, Some("default[]")),
            ("composer-2.5", None, Some("composer-2.5[fast=false]")),
            ("composer-2.5-fast", None, Some("composer-2.5[fast=true]")),
            ("sonnet-5-thinking", None, Some("sonnet-5[thinking=true]")),
            ("sonnet-5", None, Some("sonnet-5[thinking=false]")),
            ("gpt-5.6-sol", None, Some("gpt-5.6-sol[]")),
            ("claude-opus-4-8", Some("Claude Opus 4.8 1M"), Some("claude-opus-4-8[context=1m]")),
            ("composer-2.5[fast=true]", None, Some("composer-2.5[fast=true]")),
            // Not in the catalogue: nothing is guessed.
            ("gpt-5.6-sol-high", None, None),
            ("grok-9", None, None),
        ];
        for (id, display, want) in cases {
            assert_eq!(choose(&c, id, display).map(|c| c.value), want.map(str::to_owned), "{id}");
        }
    }

    #[test]
    fn the_parameterized_picker_sets_the_selects_after_the_base() {
        let c = ModelConfig::parse(&json!({"configOptions": [
            {"id": "model", "category": "model", "type": "select", "currentValue": "composer-2.5",
             "options": [{"value": "default", "name": "Auto"}, {"value": "composer-2.5", "name": "Composer 2.5"}]},
            {"id": "effort", "category": "thought_level", "type": "select", "currentValue": "medium",
             "options": [{"value": "low", "name": "Low"}, {"value": "medium", "name": "Medium"}, {"value": "high", "name": "High"}]},
            {"id": "fast", "category": "model_config", "type": "select", "currentValue": "false",
             "options": [{"value": "false", "name": "Off"}, {"value": "true", "name": "On"}]}
        ]}));
        assert_eq!(
            choose(&c, "composer-2.5-high-fast", None),
            Some(Choice {
                value: "composer-2.5".into(),
                extras: vec![("effort".into(), "high".into()), ("fast".into(), "true".into())]
            })
        );
        assert_eq!(choose(&c, "auto", None).map(|c| c.value).as_deref(), Some("default"));
    }

    #[test]
    fn legacy_models_are_read_when_there_are_no_config_options() {
        let c = ModelConfig::parse(&json!({"models": {"currentModelId": "default[]",
            "availableModels": [{"modelId": "default[]", "name": "Auto"}, {"modelId": "opus-5[]", "name": "Opus 5"}]}}));
        assert_eq!(choose(&c, "opus-5", Some("Opus 5")).map(|c| c.value).as_deref(), Some("opus-5[]"));
        assert_eq!(c.current.as_deref(), Some("default[]"));
    }

    #[test]
    fn a_load_answered_empty_keeps_a_known_catalogue() {
        let loaded = ModelConfig::parse(&json!({}));
        assert!(loaded.options.is_empty() && loaded.current.is_none());
        assert_eq!(choose(&loaded, "auto", None), None, "nothing to pick from on its own");
        let known = ModelConfig::from_model_list(&json!({"models": [
            {"value": "default[]", "name": "Auto"}, {"value": "composer-2.5[fast=true]", "name": "Composer 2.5 Fast"}]}));
        let c = loaded.or_catalogue(&known);
        assert_eq!(choose(&c, "auto", None).map(|c| c.value).as_deref(), Some("default[]"));
        assert_eq!(choose(&c, "composer-2.5-fast", None).map(|c| c.value).as_deref(), Some("composer-2.5[fast=true]"));
        assert_eq!(c.current, None, "the session's own state stays its own");
    }
}
