//! Which Cursor CLI builds the bridge is known to work with (docs/cursor-cli.md §7.3, §8). The CLI
//! updates itself and its behaviour drifts, so a build outside the range is named, not refused:
//! only one older than the oldest that knows what the bridge relies on fails.

/// The oldest build known to take `--trust` in print mode (docs/cursor-cli.md §8: builds up to
/// about 2026.05 reject the flag, which every turn passes).
pub const OLDEST_KNOWN_GOOD: (u32, u32, u32) = (2026, 6, 15);
/// The newest build the facts in docs/cursor-cli.md were gathered from.
pub const NEWEST_KNOWN_GOOD: (u32, u32, u32) = (2026, 9, 28);

use crate::backend::contract::VersionCheck;
pub use crate::backend::contract::VersionVerdict;

/// `2026.09.28-64d2043` or `2026.06.15-03-48-54-da23e37` → (2026, 9, 28).
pub fn parse(version: &str) -> Option<(u32, u32, u32)> {
    let date = version.trim().split(['-', ' ']).next()?;
    let mut parts = date.split('.');
    let (y, m, d) = (parts.next()?, parts.next()?, parts.next()?);
    if parts.next().is_some() || y.len() != 4 || !(1..=2).contains(&m.len()) || !(1..=2).contains(&d.len()) {
        return None;
    }
    Some((y.parse().ok()?, m.parse().ok()?, d.parse().ok()?))
}

pub fn judge(version: &str) -> VersionVerdict {
    match parse(version) {
        None => VersionVerdict::Unrecognised,
        Some(v) if v < OLDEST_KNOWN_GOOD => VersionVerdict::TooOld,
        Some(v) if v > NEWEST_KNOWN_GOOD => VersionVerdict::Newer,
        Some(_) => VersionVerdict::KnownGood,
    }
}

pub fn show((y, m, d): (u32, u32, u32)) -> String {
    format!("{y}.{m:02}.{d:02}")
}

/// [`judge`], with the range it judged by (what every Cursor backend answers `doctor`).
pub fn check(version: &str) -> VersionCheck {
    VersionCheck { verdict: judge(version), oldest: show(OLDEST_KNOWN_GOOD), newest: show(NEWEST_KNOWN_GOOD) }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn versions() {
        let cases = [
            ("2026.09.28-64d2043", VersionVerdict::KnownGood),
            ("2026.06.15-03-48-54-da23e37", VersionVerdict::KnownGood),
            ("2026.6.15-abc", VersionVerdict::KnownGood),
            ("2026.06.14-abc", VersionVerdict::TooOld),
            ("2025.09.18-7ae6800", VersionVerdict::TooOld),
            ("2026.10.02-1234567", VersionVerdict::Newer),
            ("2027.01.01-1", VersionVerdict::Newer),
            ("1.2.3", VersionVerdict::Unrecognised),
            ("", VersionVerdict::Unrecognised),
            ("cursor 2026.09.28", VersionVerdict::Unrecognised),
        ];
        for (v, want) in cases {
            assert_eq!(judge(v), want, "{v}");
        }
    }
}
