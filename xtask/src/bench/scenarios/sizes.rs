//! Sizes: the release binary, and the VSIX when one was packaged.

use std::path::Path;

use anyhow::Result;

use crate::bench::report::{Row, Target, Unit};
use crate::bench::Ctx;

pub fn measure(ctx: &Ctx) -> Result<Vec<Row>> {
    let (root, bins) = (ctx.root, ctx.bins);
    let mib = |p: &Path| std::fs::metadata(p).map(|m| m.len() as f64 / (1024.0 * 1024.0)).ok();
    let mut rows = Vec::new();
    let mut bin =
        Row::new("footprint", "Release binary size (MiB)", Unit::MiB, &[mib(&bins.bridge).unwrap_or(f64::NAN)])
            .target(Target::below(8.0, "< 8 MiB"))
            .note(format!("{} (stripped, LTO, as `cargo build --release` makes it).", rel(root, &bins.bridge)));
    if let Some(d) = mib(&bins.double) {
        bin = bin.reference("the CLI double, same profile", &[d]);
    }
    rows.push(bin);
    let vsix = std::fs::read_dir(root.join("dist"))
        .ok()
        .into_iter()
        .flatten()
        .filter_map(|e| e.ok().map(|e| e.path()))
        .filter(|p| p.extension().is_some_and(|x| x == "vsix"))
        .min();
    rows.push(match vsix.as_deref().and_then(|p| mib(p).map(|m| (p, m))) {
        Some((p, m)) => Row::new("footprint", "VSIX size (MiB)", Unit::MiB, &[m])
            .note(format!("{} as found (not rebuilt by the bench).", rel(root, p))),
        None => Row::missing("footprint", "VSIX size (MiB)", "n/a (run cargo xtask dist)"),
    });
    Ok(rows)
}

fn rel(root: &Path, p: &Path) -> String {
    p.strip_prefix(root).unwrap_or(p).display().to_string()
}
