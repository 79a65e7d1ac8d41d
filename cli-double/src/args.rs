//! Command-line parsing that behaves like the commander.js parser of the real CLI
//! (docs/cursor-cli.md §2.1).
//!
//! What matters for faithfulness:
//! * options may come before or after the positional prompt words;
//! * `--opt=value` and `--opt value` both work; a required value is taken from the next argument
//!   even when it starts with `-`; an optional value (`--resume [chatId]`, `-w [name]`) only takes
//!   the next argument when it does not look like an option;
//! * boolean short options can be clustered (`-pf`); a short option with a value takes the rest of
//!   the cluster (`-Hname:value`);
//! * `--` ends option parsing; a lone `-` is an ordinary word (it is NOT a stdin sentinel);
//! * `--version`/`--help` act as soon as they are met; a bad choice or a missing value errors right
//!   away; unknown options are collected and the first one is reported after parsing
//!   (`error: unknown option '--foo'`, exit 1);
//! * the first positional word selects a subcommand when it names one, otherwise all positional
//!   words form the prompt.

/// How many values an option takes.
#[derive(Clone, Copy, PartialEq, Eq, Debug)]
pub enum Arity {
    Flag,
    Required,
    Optional,
}

/// One option of the CLI surface.
#[derive(Debug)]
pub struct OptSpec {
    pub long: &'static str,
    pub short: Option<char>,
    pub arity: Arity,
    /// As shown by commander in messages, e.g. `<mode>` or `[chatId]`.
    pub value_name: &'static str,
    pub choices: &'static [&'static str],
    /// `None`: a global option. `Some(names)`: only valid after one of these subcommands.
    pub only_for: Option<&'static [&'static str]>,
}

const fn flag(long: &'static str, short: Option<char>) -> OptSpec {
    OptSpec { long, short, arity: Arity::Flag, value_name: "", choices: &[], only_for: None }
}
const fn value(long: &'static str, short: Option<char>, value_name: &'static str) -> OptSpec {
    OptSpec { long, short, arity: Arity::Required, value_name, choices: &[], only_for: None }
}
const fn optional(long: &'static str, short: Option<char>, value_name: &'static str) -> OptSpec {
    OptSpec { long, short, arity: Arity::Optional, value_name, choices: &[], only_for: None }
}
const fn choice(long: &'static str, value_name: &'static str, choices: &'static [&'static str]) -> OptSpec {
    OptSpec { long, short: None, arity: Arity::Required, value_name, choices, only_for: None }
}

pub const OUTPUT_FORMATS: &[&str] = &["text", "json", "stream-json"];

/// The options of the 2026.09.28 `--help` (docs/cursor-cli.md §2.1) plus `--format` of
/// `status`/`whoami`/`about`.
pub static OPTIONS: &[OptSpec] = &[
    flag("version", Some('v')),
    value("api-key", None, "<key>"),
    value("auth-token", None, "<token>"),
    value("header", Some('H'), "<header>"),
    value("endpoint", Some('e'), "<url>"),
    flag("print", Some('p')),
    choice("output-format", "<format>", OUTPUT_FORMATS),
    flag("stream-partial-output", None),
    choice("mode", "<mode>", &["plan", "ask"]),
    flag("plan", None),
    optional("resume", None, "[chatId]"),
    flag("continue", None),
    value("model", None, "<model>"),
    flag("list-models", None),
    flag("force", Some('f')),
    flag("yolo", None),
    flag("auto-review", None),
    choice("sandbox", "<mode>", &["enabled", "disabled"]),
    flag("approve-mcps", None),
    flag("trust", None),
    value("workspace", None, "<path>"),
    value("add-dir", None, "<path>"),
    value("plugin-dir", None, "<path>"),
    optional("worktree", Some('w'), "[name]"),
    value("worktree-base", None, "<branch>"),
    flag("skip-worktree-setup", None),
    flag("help", Some('h')),
    OptSpec {
        long: "format",
        short: None,
        arity: Arity::Required,
        value_name: "<format>",
        choices: &["text", "json"],
        only_for: Some(&["status", "whoami", "about"]),
    },
];

/// Subcommands of the 2026.09.28 help (docs/cursor-cli.md §2.2), including the hidden `acp` and
/// `sandbox`.
pub static SUBCOMMANDS: &[&str] = &[
    "persist",
    "install-shell-integration",
    "uninstall-shell-integration",
    "login",
    "logout",
    "mcp",
    "plugin",
    "worker",
    "status",
    "whoami",
    "models",
    "team",
    "bedrock",
    "about",
    "update",
    "upgrade",
    "create-chat",
    "generate-rule",
    "rule",
    "agent",
    "ls",
    "resume",
    "help",
    "acp",
    "sandbox",
];

/// Result of a successful parse.
#[derive(Debug, Default)]
pub struct Parsed {
    /// Options in the order given: (long name, value). Flags have `None`; an optional-value option
    /// given without a value has `None` too.
    pub options: Vec<(&'static str, Option<String>)>,
    /// The subcommand word, when the first positional word names one.
    pub subcommand: Option<String>,
    /// Positional words after the subcommand (or all of them when there is none).
    pub operands: Vec<String>,
}

impl Parsed {
    pub fn has(&self, long: &str) -> bool {
        self.options.iter().any(|(l, _)| *l == long)
    }

    /// The last value given for `long` (commander keeps the last one).
    pub fn value(&self, long: &str) -> Option<&str> {
        self.options.iter().rev().find(|(l, _)| *l == long).and_then(|(_, v)| v.as_deref())
    }
}

/// Why parsing stopped before producing a [`Parsed`].
#[derive(Debug, PartialEq, Eq)]
pub enum Stop {
    /// `-v`/`--version` was met.
    Version,
    /// `-h`/`--help` was met.
    Help,
    /// A commander error; the text is printed to stderr as-is and the exit code is 1.
    Error(String),
}

fn find_long(name: &str) -> Option<&'static OptSpec> {
    OPTIONS.iter().find(|o| o.long == name)
}

fn find_short(c: char) -> Option<&'static OptSpec> {
    OPTIONS.iter().find(|o| o.short == Some(c))
}

/// Commander prints options as `-m, --mode <mode>` in help but as `--mode <mode>` in errors.
fn display(spec: &OptSpec) -> String {
    if spec.value_name.is_empty() {
        format!("--{}", spec.long)
    } else {
        format!("--{} {}", spec.long, spec.value_name)
    }
}

fn looks_like_option(arg: &str) -> bool {
    arg.len() > 1 && arg.starts_with('-')
}

struct State {
    parsed: Parsed,
    first_unknown: Option<String>,
    words_seen: usize,
}

impl State {
    fn accepts(&self, spec: &OptSpec) -> bool {
        match spec.only_for {
            None => true,
            Some(names) => self.parsed.subcommand.as_deref().is_some_and(|s| names.contains(&s)),
        }
    }

    fn unknown(&mut self, arg: &str) {
        if self.first_unknown.is_none() {
            self.first_unknown = Some(arg.to_owned());
        }
    }

    /// Records an option; validates choices immediately like commander's option listeners do.
    fn record(&mut self, spec: &'static OptSpec, value: Option<String>) -> Result<(), Stop> {
        match spec.long {
            "version" => return Err(Stop::Version),
            "help" => return Err(Stop::Help),
            _ => {}
        }
        if let Some(v) = &value {
            if !spec.choices.is_empty() && !spec.choices.contains(&v.as_str()) {
                return Err(Stop::Error(format!(
                    "error: option '{}' argument '{}' is invalid. Allowed choices are {}.",
                    display(spec),
                    v,
                    spec.choices.join(", ")
                )));
            }
        }
        self.parsed.options.push((spec.long, value));
        Ok(())
    }

    fn word(&mut self, word: String) {
        if self.words_seen == 0 && self.parsed.subcommand.is_none() && SUBCOMMANDS.contains(&word.as_str()) {
            self.parsed.subcommand = Some(word);
        } else {
            self.parsed.operands.push(word);
        }
        self.words_seen += 1;
    }
}

/// The value of an option that takes one, from the next argument (`--model auto`, `-m auto`):
/// required values take whatever comes next; optional ones only a word that is not an option.
fn separate_value(spec: &OptSpec, args: &[String], i: &mut usize) -> Result<Option<String>, Stop> {
    match (spec.arity, args.get(*i)) {
        (Arity::Flag, _) => Ok(None),
        (Arity::Required, Some(next)) => {
            *i += 1;
            Ok(Some(next.clone()))
        }
        (Arity::Required, None) => Err(missing(spec)),
        (Arity::Optional, Some(next)) if !looks_like_option(next) => {
            *i += 1;
            Ok(Some(next.clone()))
        }
        (Arity::Optional, _) => Ok(None),
    }
}

fn missing(spec: &OptSpec) -> Stop {
    Stop::Error(format!("error: option '{}' argument missing", display(spec)))
}

/// Parses everything after the program name.
pub fn parse(args: &[String]) -> Result<Parsed, Stop> {
    let mut st = State { parsed: Parsed::default(), first_unknown: None, words_seen: 0 };
    let mut i = 0;
    while i < args.len() {
        let arg = &args[i];
        i += 1;
        if arg == "--" {
            for rest in &args[i..] {
                st.word(rest.clone());
            }
            break;
        }
        if let Some(body) = arg.strip_prefix("--") {
            let (name, inline) = match body.split_once('=') {
                Some((n, v)) => (n, Some(v.to_owned())),
                None => (body, None),
            };
            let spec = match find_long(name) {
                Some(spec) if st.accepts(spec) => spec,
                _ => {
                    st.unknown(arg);
                    continue;
                }
            };
            let value = match (spec.arity, inline) {
                // `--print=x`: commander only splits `=` for options that take a value.
                (Arity::Flag, Some(_)) => {
                    st.unknown(arg);
                    continue;
                }
                (Arity::Flag, None) => None,
                (_, Some(v)) => Some(v),
                (_, None) => separate_value(spec, args, &mut i)?,
            };
            st.record(spec, value)?;
            continue;
        }
        if looks_like_option(arg) {
            // A cluster of short options such as `-pf` or `-Hname:value`.
            let chars: Vec<char> = arg.chars().skip(1).collect();
            let mut j = 0;
            while j < chars.len() {
                let c = chars[j];
                j += 1;
                let Some(spec) = find_short(c).filter(|s| st.accepts(s)) else {
                    // commander reports the whole argument when the first letter is unknown,
                    // else the single unknown letter.
                    let shown = if j == 1 { arg.clone() } else { format!("-{c}") };
                    st.unknown(&shown);
                    break;
                };
                let rest: String = chars[j..].iter().collect();
                let value = match spec.arity {
                    Arity::Flag => None,
                    _ if !rest.is_empty() => {
                        j = chars.len();
                        Some(rest)
                    }
                    _ => separate_value(spec, args, &mut i)?,
                };
                st.record(spec, value)?;
            }
            continue;
        }
        st.word(arg.clone());
    }
    if let Some(opt) = st.first_unknown {
        return Err(Stop::Error(format!("error: unknown option '{opt}'")));
    }
    Ok(st.parsed)
}

#[cfg(test)]
mod tests {
    use super::*;

    fn p(args: &[&str]) -> Result<Parsed, Stop> {
        parse(&args.iter().map(|s| s.to_string()).collect::<Vec<_>>())
    }

    #[test]
    fn options_before_and_after_words() {
        let r = p(&["hello", "-p", "--model=gpt", "world", "--output-format", "json"]).unwrap();
        assert_eq!(r.operands, ["hello", "world"]);
        assert!(r.has("print"));
        assert_eq!(r.value("model"), Some("gpt"));
        assert_eq!(r.value("output-format"), Some("json"));
    }

    #[test]
    fn print_takes_no_value() {
        let r = p(&["-p", "say hi"]).unwrap();
        assert_eq!(r.operands, ["say hi"]);
    }

    #[test]
    fn resume_value_is_optional() {
        assert_eq!(p(&["--resume", "abc"]).unwrap().value("resume"), Some("abc"));
        let r = p(&["--resume", "-p"]).unwrap();
        assert!(r.has("resume") && r.value("resume").is_none() && r.has("print"));
    }

    #[test]
    fn mode_agent_rejected() {
        assert_eq!(
            p(&["--mode", "agent"]).unwrap_err(),
            Stop::Error(
                "error: option '--mode <mode>' argument 'agent' is invalid. Allowed choices are plan, ask.".into()
            )
        );
    }

    #[test]
    fn unknown_and_double_dash() {
        assert_eq!(p(&["-p", "--foo"]).unwrap_err(), Stop::Error("error: unknown option '--foo'".into()));
        assert_eq!(p(&["--print=1"]).unwrap_err(), Stop::Error("error: unknown option '--print=1'".into()));
        let r = p(&["-p", "--", "--foo", "-"]).unwrap();
        assert_eq!(r.operands, ["--foo", "-"]);
    }

    #[test]
    fn clusters_and_subcommands() {
        let r = p(&["-pf", "-HX-A: 1"]).unwrap();
        assert!(r.has("print") && r.has("force"));
        assert_eq!(r.value("header"), Some("X-A: 1"));
        let r = p(&["status", "--format", "json"]).unwrap();
        assert_eq!(r.subcommand.as_deref(), Some("status"));
        assert_eq!(p(&["--format", "json"]).unwrap_err(), Stop::Error("error: unknown option '--format'".into()));
        let r = p(&["chat", "status"]).unwrap();
        assert_eq!(r.subcommand, None);
        assert_eq!(r.operands, ["chat", "status"]);
    }

    #[test]
    fn missing_value_and_version_first() {
        assert_eq!(
            p(&["--model"]).unwrap_err(),
            Stop::Error("error: option '--model <model>' argument missing".into())
        );
        assert_eq!(p(&["--bogus", "-v"]).unwrap_err(), Stop::Version);
    }
}
