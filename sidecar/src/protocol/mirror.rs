//! `vscode-client/src/protocol.ts` must say what this module says, field by field: a wire change
//! that forgets the extension fails here, in the inner loop, not in a user's chat.
//!
//! Both sides are read as source. The Rust side (`protocol/` and the `vocab/` terms its messages
//! are made of) with `syn`, applying the serde attributes that
//! shape the wire (`rename_all`, `rename`, `skip*`, `default`, `flatten`, `tag`); the TypeScript
//! side with a small reader for the subset protocol.ts is written in (interfaces, object literal
//! types, unions, arrays, string literals). Each Rust wire struct and enum is compared with the
//! TypeScript type of the same name, or with the inline object or literal union written where a
//! field uses it. What is compared: the set of field names, each field's shape (string, number,
//! boolean, JSON, list, nullable, a named type), and optionality where a mismatch breaks someone:
//! a field the sidecar may omit must be optional in TypeScript, and a field TypeScript may omit
//! must have a default in Rust.

use std::collections::{BTreeMap, BTreeSet};
use std::path::{Path, PathBuf};

/// Rust wire types with no TypeScript twin of their own, and why that is right.
const RUST_ONLY: &[(&str, &str)] = &[
    ("CancelParams", "vscode-jsonrpc sends `$/cancelRequest` itself"),
    ("ChatDelta", "`{turnId, seq} & DeltaBody` in TypeScript; DeltaBody is compared"),
];

/// TypeScript types with no Rust twin, and why.
const TS_ONLY: &[(&str, &str)] = &[
    ("Requests", "the method → params/result map that types `request()`"),
    ("Method", "the keys of `Requests`"),
    ("DeltaKind", "`DELTA_KINDS` as a type; the kinds are checked by test/protocol.test.ts"),
    ("ErrorKind", "`ERROR_KINDS` as a type; the kinds are checked by test/protocol.test.ts"),
    ("ToolChoice", "custom serde in Rust (`\"auto\"` … or `{name}`); written out by hand in both"),
];

#[derive(Debug, Clone, PartialEq)]
enum Shape {
    Str,
    Num,
    Bool,
    /// Any JSON value (`serde_json::Value`, TypeScript's `object`/`unknown`).
    Json,
    List(Box<Shape>),
    /// Rust `Option<T>`; TypeScript `T | null`.
    Nullable(Box<Shape>),
    Named(String),
    /// TypeScript only: an object literal written where the field is.
    Object(Vec<Field>),
    /// A union of string literals.
    Literals(BTreeSet<String>),
    /// A union of object literals tagged by `kind` (TypeScript's side of a tagged enum).
    Tagged(BTreeMap<String, Vec<Field>>),
}

#[derive(Debug, Clone, PartialEq)]
struct Field {
    name: String,
    shape: Shape,
    /// TypeScript: written `name?:`. Rust: the sidecar may leave it out of what it sends.
    optional: bool,
    /// Rust only: a message without it is still read (a default, or an `Option`).
    has_default: bool,
}

#[derive(Debug)]
enum RustType {
    Struct(Vec<Field>),
    Literals(BTreeSet<String>),
    Tagged(BTreeMap<String, Vec<Field>>),
}

// -------------------------------------------------------------------------------------------------
// The Rust side

#[derive(Default)]
struct Serde {
    rename_all: Option<String>,
    rename_all_fields: Option<String>,
    rename: Option<String>,
    tag: Option<String>,
    default: bool,
    skip: bool,
    skip_serializing: bool,
    skip_serializing_if: bool,
    flatten: bool,
    transparent: bool,
}

fn serde_attrs(attrs: &[syn::Attribute]) -> Serde {
    let mut s = Serde::default();
    for attr in attrs.iter().filter(|a| a.path().is_ident("serde")) {
        attr.parse_nested_meta(|meta| {
            let key = meta.path.get_ident().map(|i| i.to_string()).unwrap_or_default();
            let value = if meta.input.peek(syn::Token![=]) {
                Some(meta.value()?.parse::<syn::LitStr>()?.value())
            } else {
                None
            };
            match key.as_str() {
                "rename_all" => s.rename_all = value,
                "rename_all_fields" => s.rename_all_fields = value,
                "rename" => s.rename = value,
                "tag" => s.tag = value,
                "default" => s.default = true,
                "skip" => s.skip = true,
                "skip_serializing" => s.skip_serializing = true,
                "skip_serializing_if" => s.skip_serializing_if = true,
                "flatten" => s.flatten = true,
                "transparent" => s.transparent = true,
                _ => {}
            }
            Ok(())
        })
        .expect("a #[serde(…)] attribute this reader understands");
    }
    s
}

fn is_wire(attrs: &[syn::Attribute]) -> bool {
    attrs.iter().filter(|a| a.path().is_ident("derive")).any(|a| {
        let text = a.meta.require_list().map(|l| l.tokens.to_string()).unwrap_or_default();
        text.contains("Serialize") || text.contains("Deserialize")
    })
}

/// serde's `rename_all` for the two rules this protocol uses.
fn renamed(ident: &str, rule: Option<&str>) -> String {
    match rule {
        None => ident.to_string(),
        Some("camelCase") => {
            let mut out = String::new();
            let mut upper = false;
            for (i, c) in ident.chars().enumerate() {
                if c == '_' {
                    upper = true;
                } else if i == 0 {
                    out.extend(c.to_lowercase());
                } else if upper {
                    out.extend(c.to_uppercase());
                    upper = false;
                } else {
                    out.push(c);
                }
            }
            out
        }
        Some(other) => panic!("rename_all = {other:?}: teach protocol/mirror.rs this rule"),
    }
}

fn rust_shape(ty: &syn::Type) -> Shape {
    match ty {
        syn::Type::Reference(r) => rust_shape(&r.elem),
        syn::Type::Path(p) => {
            let last = p.path.segments.last().expect("a type has a name");
            let arg = || match &last.arguments {
                syn::PathArguments::AngleBracketed(a) => a.args.iter().find_map(|a| match a {
                    syn::GenericArgument::Type(t) => Some(rust_shape(t)),
                    _ => None,
                }),
                _ => None,
            };
            match last.ident.to_string().as_str() {
                "String" | "str" | "Cow" => Shape::Str,
                "u8" | "u16" | "u32" | "u64" | "usize" | "i32" | "i64" | "f64" => Shape::Num,
                "bool" => Shape::Bool,
                "Value" | "BTreeMap" | "HashMap" => Shape::Json,
                "Vec" => Shape::List(Box::new(arg().expect("Vec<T>"))),
                "Option" => Shape::Nullable(Box::new(arg().expect("Option<T>"))),
                // A transparent string whose `Debug` hides it (the API key).
                "Secret" => Shape::Str,
                name => Shape::Named(name.to_string()),
            }
        }
        other => panic!("a wire field of a type protocol/mirror.rs cannot read: {}", quote_type(other)),
    }
}

fn quote_type(ty: &syn::Type) -> String {
    use quote::ToTokens;
    ty.to_token_stream().to_string()
}

fn rust_fields(fields: &syn::Fields, rule: Option<&str>, container_default: bool) -> Vec<Field> {
    let mut out = Vec::new();
    for f in fields.iter() {
        let attrs = serde_attrs(&f.attrs);
        // `flatten` only carries the unknown options aside; `skip` is not on the wire.
        if attrs.skip || attrs.flatten {
            continue;
        }
        let ident = f.ident.as_ref().expect("named fields").to_string();
        let shape = rust_shape(&f.ty);
        out.push(Field {
            name: attrs.rename.unwrap_or_else(|| renamed(&ident, rule)),
            optional: attrs.skip_serializing_if || attrs.skip_serializing,
            has_default: attrs.default || container_default || matches!(shape, Shape::Nullable(_)),
            shape,
        });
    }
    out
}

fn rust_types(dirs: &[PathBuf]) -> BTreeMap<String, RustType> {
    let mut types = BTreeMap::new();
    let mut files: Vec<_> =
        dirs.iter().flat_map(|d| std::fs::read_dir(d).unwrap()).map(|e| e.unwrap().path()).collect();
    files.sort();
    for path in files.iter().filter(|p| p.extension().is_some_and(|e| e == "rs")) {
        let file = syn::parse_file(&std::fs::read_to_string(path).unwrap()).expect("protocol files parse");
        for item in file.items {
            match item {
                syn::Item::Struct(s) if is_wire(&s.attrs) => {
                    let attrs = serde_attrs(&s.attrs);
                    if attrs.transparent || !matches!(s.fields, syn::Fields::Named(_)) {
                        continue;
                    }
                    let fields = rust_fields(&s.fields, attrs.rename_all.as_deref(), attrs.default);
                    types.insert(s.ident.to_string(), RustType::Struct(fields));
                }
                syn::Item::Enum(e) if is_wire(&e.attrs) => {
                    let attrs = serde_attrs(&e.attrs);
                    let name = |v: &syn::Variant| {
                        serde_attrs(&v.attrs)
                            .rename
                            .unwrap_or_else(|| renamed(&v.ident.to_string(), attrs.rename_all.as_deref()))
                    };
                    let ty = if attrs.tag.is_some() {
                        let field_rule = attrs.rename_all_fields.as_deref();
                        RustType::Tagged(
                            e.variants.iter().map(|v| (name(v), rust_fields(&v.fields, field_rule, false))).collect(),
                        )
                    } else {
                        assert!(
                            e.variants.iter().all(|v| v.fields.is_empty()),
                            "{}: untagged data enums are not mirrored",
                            e.ident
                        );
                        RustType::Literals(e.variants.iter().map(name).collect())
                    };
                    types.insert(e.ident.to_string(), ty);
                }
                _ => {}
            }
        }
    }
    types
}

// -------------------------------------------------------------------------------------------------
// The TypeScript side

fn strip_comments(ts: &str) -> String {
    let mut out = String::with_capacity(ts.len());
    let mut rest = ts;
    while !rest.is_empty() {
        if let Some(after) = rest.strip_prefix("/*") {
            rest = after.split_once("*/").map_or("", |(_, r)| r);
        } else if let Some(after) = rest.strip_prefix("//") {
            rest = after.split_once('\n').map_or("", |(_, r)| r);
            out.push('\n');
        } else if rest.starts_with('\'') || rest.starts_with('"') || rest.starts_with('`') {
            // A string literal, kept whole, so `//` inside it is not a comment.
            let quote = rest.chars().next().unwrap();
            let end = rest[1..].find(quote).map_or(rest.len(), |i| i + 2);
            out.push_str(&rest[..end]);
            rest = &rest[end..];
        } else {
            let c = rest.chars().next().unwrap();
            out.push(c);
            rest = &rest[c.len_utf8()..];
        }
    }
    out
}

/// Splits at `sep` where no bracket is open.
fn split_top(text: &str, sep: char) -> Vec<&str> {
    let (mut depth, mut start, mut parts) = (0i32, 0, Vec::new());
    for (i, c) in text.char_indices() {
        match c {
            '{' | '(' | '[' | '<' => depth += 1,
            '}' | ')' | ']' | '>' => depth -= 1,
            c if c == sep && depth == 0 => {
                parts.push(&text[start..i]);
                start = i + c.len_utf8();
            }
            _ => {}
        }
    }
    parts.push(&text[start..]);
    parts.into_iter().map(str::trim).filter(|p| !p.is_empty()).collect()
}

fn ts_fields(body: &str) -> Vec<Field> {
    split_top(body, ';')
        .into_iter()
        .flat_map(|f| split_top(f, ','))
        .map(|f| {
            let (name, ty) = f.split_once(':').unwrap_or_else(|| panic!("protocol.ts: a field `{f}` without a type"));
            let name = name.trim();
            let (name, optional) = match name.strip_suffix('?') {
                Some(n) => (n, true),
                None => (name, false),
            };
            Field { name: name.to_string(), shape: ts_shape(ty), optional, has_default: false }
        })
        .collect()
}

fn ts_shape(ty: &str) -> Shape {
    let ty = ty.trim();
    let members = split_top(ty, '|');
    if members.len() > 1 {
        let nullable = members.contains(&"null");
        let rest: Vec<&str> = members.into_iter().filter(|m| *m != "null").collect();
        let shape = if rest.iter().all(|m| m.starts_with('\'')) {
            Shape::Literals(rest.iter().map(|m| m.trim_matches('\'').to_string()).collect())
        } else if rest.iter().all(|m| m.starts_with('{')) {
            let mut tagged = BTreeMap::new();
            for m in rest {
                let mut fields = ts_fields(&m[1..m.len() - 1]);
                let kind = fields.iter().position(|f| f.name == "kind").expect("each member names its kind");
                match fields.remove(kind).shape {
                    Shape::Literals(l) if l.len() == 1 => tagged.insert(l.into_iter().next().unwrap(), fields),
                    other => panic!("protocol.ts: `kind` is not one literal: {other:?}"),
                };
            }
            Shape::Tagged(tagged)
        } else if rest.len() == 1 {
            ts_shape(rest[0])
        } else {
            panic!("protocol.ts: a union protocol/mirror.rs cannot read: {ty}")
        };
        return if nullable { Shape::Nullable(Box::new(shape)) } else { shape };
    }
    if let Some(inner) = ty.strip_suffix("[]") {
        return Shape::List(Box::new(ts_shape(inner)));
    }
    if ty.starts_with('{') && ty.ends_with('}') {
        return Shape::Object(ts_fields(&ty[1..ty.len() - 1]));
    }
    if ty.starts_with('\'') {
        return Shape::Literals([ty.trim_matches('\'').to_string()].into());
    }
    match ty {
        "string" => Shape::Str,
        "number" => Shape::Num,
        "boolean" => Shape::Bool,
        "object" | "unknown" => Shape::Json,
        t if t.starts_with("Record<") => Shape::Json,
        t if t.chars().all(|c| c.is_alphanumeric() || c == '_') => Shape::Named(t.to_string()),
        other => panic!("protocol.ts: a type protocol/mirror.rs cannot read: {other}"),
    }
}

/// `export interface Name { … }` and `export type Name = …;`, by name.
fn ts_types(ts: &str) -> BTreeMap<String, Shape> {
    let ts = strip_comments(ts);
    let mut types = BTreeMap::new();
    for decl in ts.split("export ").skip(1) {
        if let Some(rest) = decl.strip_prefix("interface ") {
            let (name, body) = rest.split_once('{').expect("interface body");
            // The body runs to the brace that closes the one opened after the name.
            let mut depth = 1;
            let end = body
                .char_indices()
                .find(|&(_, c)| {
                    depth += match c {
                        '{' => 1,
                        '}' => -1,
                        _ => 0,
                    };
                    depth == 0
                })
                .map(|(i, _)| i)
                .expect("interface closes");
            let name = name.trim().to_string();
            // `Requests` is keyed by computed names (`[Request.initialize]`); it has no twin.
            if TS_ONLY.iter().any(|(n, _)| *n == name) {
                types.insert(name, Shape::Json);
            } else {
                types.insert(name, Shape::Object(ts_fields(&body[..end])));
            }
        } else if let Some(rest) = decl.strip_prefix("type ") {
            let (name, ty) = rest.split_once('=').expect("type alias");
            let name = name.trim().to_string();
            // The alias ends at the first `;` outside its braces.
            let ty = split_top(ty, ';').into_iter().next().unwrap_or_default();
            let shape =
                if TS_ONLY.iter().chain(RUST_ONLY).any(|(n, _)| *n == name) { Shape::Json } else { ts_shape(ty) };
            types.insert(name, shape);
        }
    }
    types
}

// -------------------------------------------------------------------------------------------------
// The comparison

struct Compare<'a> {
    rust: &'a BTreeMap<String, RustType>,
    problems: Vec<String>,
    /// Rust types some TypeScript type was compared with (by name or written inline).
    seen: BTreeSet<String>,
}

impl Compare<'_> {
    fn shape(&mut self, at: &str, rust: &Shape, ts: &Shape) {
        match (rust, ts) {
            (Shape::Nullable(r), Shape::Nullable(t)) => self.shape(at, r, t),
            // An `Option` the sidecar never sends as `null` (skipped when absent) is written `T?`.
            (Shape::Nullable(r), t) => self.shape(at, r, t),
            (r, Shape::Nullable(_)) => {
                self.problems.push(format!("{at}: protocol.ts allows null, the sidecar does not ({r:?})"))
            }
            (Shape::List(r), Shape::List(t)) => self.shape(at, r, t),
            (Shape::Named(r), Shape::Named(t)) if r == t => {
                self.seen.insert(r.clone());
            }
            (Shape::Named(r), t) if self.rust.contains_key(r) => {
                self.seen.insert(r.clone());
                let rust = self.rust;
                // A type compared where a field uses it is named beside the field.
                let at = if at == r { at.to_string() } else { format!("{at} ({r})") };
                match (&rust[r], t) {
                    (RustType::Struct(rf), Shape::Object(tf)) => self.fields(&at, rf, tf),
                    (RustType::Literals(rl), Shape::Literals(tl)) => self.literals(&at, rl, tl),
                    (RustType::Tagged(rv), Shape::Tagged(tv)) => self.tagged(&at, rv, tv),
                    (_, t) => self.problems.push(format!("{at}: the sidecar's {r} is written {t:?} in protocol.ts")),
                }
            }
            (r, t) if r == t => {}
            (r, t) => self.problems.push(format!("{at}: the sidecar sends {r:?}, protocol.ts says {t:?}")),
        }
    }

    fn fields(&mut self, at: &str, rust: &[Field], ts: &[Field]) {
        let names = |fs: &[Field]| fs.iter().map(|f| f.name.clone()).collect::<BTreeSet<_>>();
        for missing in names(rust).difference(&names(ts)) {
            self.problems.push(format!("{at}: `{missing}` is on the wire but not in protocol.ts"));
        }
        for extra in names(ts).difference(&names(rust)) {
            self.problems.push(format!("{at}: protocol.ts has `{extra}`, which the sidecar does not know"));
        }
        for r in rust {
            let Some(t) = ts.iter().find(|t| t.name == r.name) else { continue };
            let here = format!("{at}.{}", r.name);
            if r.optional && !t.optional {
                self.problems
                    .push(format!("{here}: the sidecar may leave it out; mark it optional (`?`) in protocol.ts"));
            }
            if t.optional && !r.has_default {
                self.problems.push(format!("{here}: the sidecar requires it; protocol.ts marks it optional"));
            }
            self.shape(&here, &r.shape, &t.shape);
        }
    }

    fn literals(&mut self, at: &str, rust: &BTreeSet<String>, ts: &BTreeSet<String>) {
        if rust != ts {
            self.problems.push(format!("{at}: the sidecar's values {rust:?}, protocol.ts's {ts:?}"));
        }
    }

    fn tagged(&mut self, at: &str, rust: &BTreeMap<String, Vec<Field>>, ts: &BTreeMap<String, Vec<Field>>) {
        let rk: BTreeSet<_> = rust.keys().collect();
        let tk: BTreeSet<_> = ts.keys().collect();
        if rk != tk {
            self.problems.push(format!("{at}: the sidecar's kinds {rk:?}, protocol.ts's {tk:?}"));
        }
        for (kind, rf) in rust {
            if let Some(tf) = ts.get(kind) {
                self.fields(&format!("{at} `{kind}`"), rf, tf);
            }
        }
    }
}

fn mirror_problems(rust_dirs: &[PathBuf], ts_source: &str) -> Vec<String> {
    let rust = rust_types(rust_dirs);
    let ts = ts_types(ts_source);
    let mut cmp = Compare { rust: &rust, problems: Vec::new(), seen: BTreeSet::new() };
    for (name, shape) in &ts {
        if TS_ONLY.iter().chain(RUST_ONLY).any(|(n, _)| n == name) {
            continue;
        }
        if !rust.contains_key(name) {
            cmp.problems.push(format!("protocol.ts has `{name}`, which is no wire type of the sidecar"));
            continue;
        }
        cmp.shape(name, &Shape::Named(name.clone()), shape);
    }
    for name in rust.keys() {
        if !cmp.seen.contains(name) && !RUST_ONLY.iter().any(|(n, _)| n == name) {
            cmp.problems.push(format!("`{name}` is a wire type protocol.ts does not have (or write inline)"));
        }
    }
    cmp.problems
}

/// The wire's messages and the shared terms they are made of; protocol.ts.
fn paths() -> (Vec<PathBuf>, String) {
    let root = Path::new(env!("CARGO_MANIFEST_DIR"));
    let ts = std::fs::read_to_string(root.join("../vscode-client/src/protocol.ts")).expect("protocol.ts");
    (vec![root.join("src/protocol"), root.join("src/vocab")], ts)
}

#[test]
fn protocol_ts_has_every_wire_type_and_field_of_the_sidecar() {
    let (dir, ts) = paths();
    let problems = mirror_problems(&dir, &ts);
    assert!(
        problems.is_empty(),
        "vscode-client/src/protocol.ts vs sidecar/src/protocol/ and vocab/:\n{}",
        problems.join("\n")
    );
}

/// The check can fail: each edit a careless change could make to protocol.ts is caught.
#[test]
fn the_mirror_check_finds_each_kind_of_drift() {
    let (dir, ts) = paths();
    let cases = [
        // A field the sidecar has, forgotten in TypeScript.
        ("  resumed: boolean;\n  /** `\"end\"`", "  /** `\"end\"`", "`resumed` is on the wire but not in protocol.ts"),
        // A field TypeScript sends that the sidecar would silently drop.
        ("  refresh?: boolean;", "  refresh?: boolean;\n  refetch?: boolean;", "protocol.ts has `refetch`"),
        // A required field written optional: the sidecar would refuse the message.
        (
            "  turnId: string;\n  model: string;",
            "  turnId: string;\n  model?: string;",
            "ChatSendParams.model: the sidecar requires it",
        ),
        // A field the sidecar may omit, written required: the client would read `undefined`.
        ("  detail?: string;\n}\n\n//", "  detail: string;\n}\n\n//", "ErrorData.detail: the sidecar may leave it out"),
        // A shape changed.
        ("  durationMs: number;", "  durationMs: string;", "durationMs: the sidecar sends Num"),
        // A literal added on one side only.
        ("'agent' | 'ask' | 'plan'", "'agent' | 'ask' | 'plan' | 'debug'", "the sidecar's values"),
        // A delta kind's field renamed.
        (
            "{ kind: 'session'; sessionId: string;",
            "{ kind: 'session'; session: string;",
            "`session`: `sessionId` is on the wire",
        ),
    ];
    for (from, to, expected) in cases {
        assert!(ts.contains(from), "the case's text is no longer in protocol.ts: {from:?}");
        let problems = mirror_problems(&dir, &ts.replacen(from, to, 1));
        assert!(problems.iter().any(|p| p.contains(expected)), "{to:?} should give {expected:?}, got {problems:#?}");
    }
}
