//! Tool names MCP clients accept: within the agent's budget for a server name and a tool name
//! together ([`McpLimits::combined`](super::McpLimits)), and `[A-Za-z0-9_-]`, what every model API
//! takes in a function name. A name that already fits is kept exactly (the model then sees the client's own names,
//! which the client's prompts refer to); one that does not becomes a sanitised, cut prefix plus a
//! hash of the whole name, so it stays recognisable and two long names with the same beginning
//! stay apart. A shortened name cannot be turned back by itself: the offer (`offer::ToolOffer`) keeps the table.

use std::collections::HashSet;

use crate::util::text::fnv1a;

/// `_` and 8 hex digits of the hash.
const SUFFIX_LEN: usize = 9;
/// The shortest budget that leaves a prefix of at least one character.
pub const MIN_BUDGET: usize = SUFFIX_LEN + 1;

pub fn allowed_char(c: char) -> bool {
    c.is_ascii_alphanumeric() || c == '_' || c == '-'
}

/// May `name` be offered as it is, within `budget` characters?
pub fn fits(name: &str, budget: usize) -> bool {
    !name.is_empty() && name.len() <= budget && name.chars().all(allowed_char)
}

/// A name of at most `budget` (≥ [`MIN_BUDGET`]) allowed characters for `name`: its allowed
/// characters (each run of others as one `_`), cut, then `_` and a hash of `name` and `salt`. A
/// caller whose first choice (salt 0) is taken tries the next salt.
pub fn shortened(name: &str, budget: usize, salt: u32) -> String {
    debug_assert!(budget >= MIN_BUDGET);
    let mut prefix = String::with_capacity(name.len().min(budget));
    for c in name.chars() {
        if allowed_char(c) {
            prefix.push(c);
        } else if !prefix.ends_with('_') {
            prefix.push('_');
        }
    }
    // All ASCII now, so a byte cut is a char cut.
    prefix.truncate(budget.max(MIN_BUDGET) - SUFFIX_LEN);
    let prefix = prefix.trim_end_matches(['_', '-']);
    let prefix = if prefix.is_empty() { "tool" } else { prefix };
    let hash = if salt == 0 { fnv1a(name) } else { fnv1a(&format!("{name}\u{0}{salt}")) };
    // Fold the 64 bits into the 32 the suffix shows, so every input bit counts.
    let short = (hash ^ (hash >> 32)) as u32;
    format!("{prefix}_{short:08x}")
}

/// An offered name for each of `names` (in order, each unique and fitting `budget`), none of them
/// in `taken`, which gains them. Names that fit are claimed first, so a shortened name never
/// takes the exact name of a tool later in the list. `names` must not repeat.
pub fn assign(names: &[&str], budget: usize, taken: &mut HashSet<String>) -> Vec<String> {
    let mut out: Vec<Option<String>> = names
        .iter()
        .map(|name| (fits(name, budget) && taken.insert(name.to_string())).then(|| name.to_string()))
        .collect();
    for (slot, name) in out.iter_mut().zip(names) {
        if slot.is_none() {
            let mut salt = 0;
            let chosen = loop {
                let candidate = shortened(name, budget, salt);
                if taken.insert(candidate.clone()) {
                    break candidate;
                }
                salt += 1;
            };
            *slot = Some(chosen);
        }
    }
    out.into_iter().flatten().collect()
}

#[cfg(test)]
mod tests {
    use super::*;

    const BUDGET: usize = crate::backend::mcp::TEST_LIMITS.combined - 2; // after "cb"

    #[test]
    fn names_that_fit_are_kept_exactly() {
        let long_but_fine = "a".repeat(BUDGET);
        let names = ["create_file", "run-in-terminal", "copilot_getErrors", "X1", long_but_fine.as_str()];
        let got = assign(&names, BUDGET, &mut HashSet::new());
        assert_eq!(got, names);
    }

    #[test]
    fn names_that_do_not_fit_are_shortened_recognisably() {
        // (client name, the start the offered name keeps)
        let cases = [
            ("a".repeat(BUDGET + 1), "a".repeat(BUDGET - SUFFIX_LEN)),
            ("mcp.github/create_pull_request".into(), "mcp_github_create_pull_request".into()),
            ("ouvrir le fichier résumé".into(), "ouvrir_le_fichier_r_sum".into()),
            ("日本語のツール".into(), "tool".into()),
            ("".into(), "tool".into()),
            ("--".repeat(40), "tool".into()),
            (
                "tool name with spaces and more words than fit in fifty-seven chars".into(),
                "tool_name_with_spaces_and_more_words_than_fit_in".into(),
            ),
        ];
        for (name, start) in &cases {
            let got = &assign(&[name.as_str()], BUDGET, &mut HashSet::new())[0];
            assert!(fits(got, BUDGET), "{name:?} → {got:?} does not fit");
            assert!(
                got.len() <= BUDGET && "cb".len() + got.len() <= crate::backend::mcp::TEST_LIMITS.combined,
                "{got:?}"
            );
            assert!(got.starts_with(start.as_str()), "{name:?} → {got:?} should start with {start:?}");
            let suffix = &got[got.len() - 8..];
            assert!(suffix.chars().all(|c| c.is_ascii_hexdigit()), "{got:?}");
            assert_eq!(shortened(name, BUDGET, 0), *got, "stable for the same name");
        }
    }

    #[test]
    fn collisions_get_distinct_names() {
        // Same sanitised form, same long prefix, and an exact name that equals another's first choice.
        let long = "x".repeat(70);
        let long2 = format!("{long}y");
        let first_choice = shortened("a.b", BUDGET, 0);
        let names = ["a.b", "a:b", "a b", long.as_str(), long2.as_str(), first_choice.as_str()];
        let mut taken = HashSet::from(["call_tool".to_string()]);
        let got = assign(&names, BUDGET, &mut taken);
        assert_eq!(got.len(), names.len());
        let unique: HashSet<&String> = got.iter().collect();
        assert_eq!(unique.len(), names.len(), "{got:?}");
        assert_eq!(got[5], first_choice, "an exact name that fits keeps it");
        assert_ne!(got[0], first_choice, "the shortened name moved aside");
        assert!(got.iter().all(|n| fits(n, BUDGET)));
        assert!(got.iter().all(|n| n != "call_tool"), "taken names stay taken");
        assert_eq!(taken.len(), names.len() + 1);
    }

    #[test]
    fn a_taken_exact_name_is_shortened_too() {
        let mut taken = HashSet::from(["call_tool".to_string()]);
        let got = assign(&["call_tool"], BUDGET, &mut taken);
        assert_ne!(got[0], "call_tool");
        assert!(got[0].starts_with("call_tool_"), "{got:?}");
    }
}
