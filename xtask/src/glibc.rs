//! Linux packages that start on every distribution VS Code supports: the `*-linux-gnu` sidecar is
//! linked against glibc 2.28 (RHEL 8, Debian 10; Ubuntu 20.04 has 2.31) with `cargo zigbuild`,
//! whatever glibc the build machine has, and every packaged binary is checked to need no newer
//! `GLIBC_` symbol version than that (its ELF version-needs section, read here: no objdump needed,
//! and any architecture).
//!
//! cargo-zigbuild comes from crates.io (`cargo install --locked`) and Zig from PyPI's `ziglang`
//! wheel (which ships the compiler), both pinned and installed once into the tool cache.

use std::path::{Path, PathBuf};
use std::process::Command;

use anyhow::{bail, Context, Result};

/// The oldest glibc the Linux packages support; `vscode-client/src/platform.ts` says the same.
pub const GLIBC_FLOOR: (u32, u32) = (2, 28);
const CARGO_ZIGBUILD: &str = "0.24.1";
const ZIGLANG: &str = "0.15.2";

/// `x86_64-unknown-linux-gnu` → `x86_64-unknown-linux-gnu.2.28`; None for other targets.
pub fn zig_target(triple: &str) -> Option<String> {
    triple.ends_with("-linux-gnu").then(|| format!("{triple}.{}.{}", GLIBC_FLOOR.0, GLIBC_FLOOR.1))
}

pub struct Zigbuild {
    cargo_zigbuild: PathBuf,
    zig: PathBuf,
    cache: PathBuf,
}

/// Install the pinned cargo-zigbuild and Zig unless they are there.
pub fn ensure(root: &Path) -> Result<Zigbuild> {
    let cache = crate::workflows::cache_dir(root);
    let crate_dir = cache.join(format!("cargo-zigbuild-{CARGO_ZIGBUILD}"));
    let zig_dir = cache.join(format!("ziglang-{ZIGLANG}"));
    let tools = Zigbuild {
        cargo_zigbuild: crate_dir.join("bin").join("cargo-zigbuild"),
        zig: zig_dir.join("ziglang").join("zig"),
        cache: cache.join("zigbuild-cache"),
    };
    if !tools.cargo_zigbuild.is_file() {
        crate::run_cmd(
            crate::cargo()
                .args(["install", "--locked", "--quiet", "cargo-zigbuild", "--version"])
                .arg(format!("={CARGO_ZIGBUILD}"))
                .arg("--root")
                .arg(&crate_dir),
        )
        .context("installing cargo-zigbuild from crates.io")?;
    }
    let complete = zig_dir.join(".complete");
    if !complete.is_file() || !tools.zig.is_file() {
        let _ = std::fs::remove_dir_all(&zig_dir);
        crate::run_cmd(
            Command::new(if cfg!(windows) { "python" } else { "python3" })
                .args(["-m", "pip", "install", "--quiet", "--disable-pip-version-check", "--no-deps"])
                .args(["--only-binary=:all:", "--target"])
                .arg(&zig_dir)
                .arg(format!("ziglang=={ZIGLANG}")),
        )
        .context("installing Zig (the `ziglang` wheel) from PyPI needs Python 3 with pip")?;
        if !tools.zig.is_file() {
            bail!("{} is missing after installing ziglang=={ZIGLANG}", tools.zig.display());
        }
        std::fs::write(&complete, "")?;
    }
    Ok(tools)
}

impl Zigbuild {
    /// `cargo zigbuild <args>`, with our Zig and caches.
    pub fn command(&self) -> Command {
        let mut cmd = Command::new(&self.cargo_zigbuild);
        cmd.arg("zigbuild")
            .env("CARGO", crate::cargo_program())
            .env("CARGO_ZIGBUILD_ZIG_PATH", &self.zig)
            // Found before the path above when importable; ours is not on Python's path.
            .env("CARGO_ZIGBUILD_PYTHON_PATH", "/nonexistent/python3")
            .env("CARGO_ZIGBUILD_CACHE_DIR", &self.cache)
            .env("ZIG_GLOBAL_CACHE_DIR", self.cache.join("zig"))
            .env("ZIG_LOCAL_CACHE_DIR", self.cache.join("zig"));
        cmd
    }
}

/// The highest `GLIBC_x.y` version the ELF file at `path` requires, if it needs glibc at all.
pub fn max_glibc(path: &Path) -> Result<Option<(u32, u32)>> {
    let data = std::fs::read(path).with_context(|| format!("reading {}", path.display()))?;
    let versions = needed_versions(&data).with_context(|| format!("reading the ELF headers of {}", path.display()))?;
    Ok(versions.iter().filter_map(|v| parse_glibc(v)).max())
}

/// Fail unless the binary at `path` runs on glibc [`GLIBC_FLOOR`].
pub fn check(path: &Path) -> Result<()> {
    let floor = GLIBC_FLOOR;
    match max_glibc(path)? {
        Some(v) if v > floor => bail!(
            "{} needs glibc {}.{}, newer than the {}.{} the Linux packages promise (build it with `cargo zigbuild --target <triple>.{}.{}`)",
            path.display(),
            v.0,
            v.1,
            floor.0,
            floor.1,
            floor.0,
            floor.1
        ),
        Some(v) => eprintln!("xtask: {} needs glibc {}.{} at most (≤ {}.{})", path.display(), v.0, v.1, floor.0, floor.1),
        None => eprintln!("xtask: {} needs no versioned glibc symbol", path.display()),
    }
    Ok(())
}

fn parse_glibc(name: &str) -> Option<(u32, u32)> {
    let mut parts = name.strip_prefix("GLIBC_")?.split('.');
    let major = parts.next()?.parse().ok()?;
    let minor = parts.next().map_or(Some(0), |m| m.parse().ok())?;
    Some((major, minor))
}

/// The version names in the ELF's version-needs section (`.gnu.version_r`, SHT_GNU_verneed):
/// what `objdump -T` shows as `(GLIBC_2.28)`. 64-bit little-endian ELF only (x86-64, arm64).
fn needed_versions(data: &[u8]) -> Result<Vec<String>> {
    const SHT_GNU_VERNEED: u32 = 0x6fff_fffe;
    let u16_at = |o: usize| data.get(o..o + 2).map(|b| u16::from_le_bytes([b[0], b[1]]) as usize);
    let u32_at = |o: usize| data.get(o..o + 4).map(|b| u32::from_le_bytes(b.try_into().unwrap()) as usize);
    let u64_at = |o: usize| data.get(o..o + 8).map(|b| u64::from_le_bytes(b.try_into().unwrap()) as usize);
    if data.get(..4) != Some(b"\x7fELF") {
        bail!("not an ELF file");
    }
    if data.get(4..6) != Some(&[2, 1]) {
        bail!("not a 64-bit little-endian ELF file");
    }
    let truncated = || anyhow::anyhow!("truncated ELF file");
    let shoff = u64_at(0x28).ok_or_else(truncated)?;
    let shentsize = u16_at(0x3a).ok_or_else(truncated)?;
    let shnum = u16_at(0x3c).ok_or_else(truncated)?;
    let section = |i: usize| shoff + i * shentsize;
    let mut names = Vec::new();
    for i in 0..shnum {
        let sh = section(i);
        if u32_at(sh + 4).ok_or_else(truncated)? != SHT_GNU_VERNEED as usize {
            continue;
        }
        let offset = u64_at(sh + 24).ok_or_else(truncated)?;
        let count = u32_at(sh + 44).ok_or_else(truncated)?; // sh_info: the number of entries
        let strtab = u64_at(section(u32_at(sh + 40).ok_or_else(truncated)?) + 24).ok_or_else(truncated)?;
        let string = |o: usize| -> Result<String> {
            let start = strtab + o;
            let bytes = data.get(start..).ok_or_else(truncated)?;
            let end = bytes.iter().position(|&b| b == 0).ok_or_else(truncated)?;
            Ok(String::from_utf8_lossy(&bytes[..end]).into_owned())
        };
        let mut need = offset;
        for _ in 0..count {
            let aux_count = u16_at(need + 2).ok_or_else(truncated)?;
            let mut aux = need + u32_at(need + 8).ok_or_else(truncated)?;
            for _ in 0..aux_count {
                names.push(string(u32_at(aux + 8).ok_or_else(truncated)?)?);
                aux += u32_at(aux + 12).ok_or_else(truncated)?;
            }
            need += u32_at(need + 12).ok_or_else(truncated)?;
        }
    }
    Ok(names)
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn names_the_zig_target_for_gnu_only() {
        assert_eq!(zig_target("x86_64-unknown-linux-gnu").as_deref(), Some("x86_64-unknown-linux-gnu.2.28"));
        assert_eq!(zig_target("aarch64-unknown-linux-gnu").as_deref(), Some("aarch64-unknown-linux-gnu.2.28"));
        assert_eq!(zig_target("x86_64-unknown-linux-musl"), None);
        assert_eq!(zig_target("x86_64-pc-windows-msvc"), None);
    }

    #[test]
    fn parses_glibc_version_names() {
        assert_eq!(parse_glibc("GLIBC_2.28"), Some((2, 28)));
        assert_eq!(parse_glibc("GLIBC_2.2.5"), Some((2, 2)));
        assert_eq!(parse_glibc("GLIBC_2.3"), Some((2, 3)));
        assert_eq!(parse_glibc("GLIBC_PRIVATE"), None);
        assert_eq!(parse_glibc("GCC_3.0"), None);
    }

    /// This test binary, built against the machine's glibc, needs at least the x86-64 or arm64
    /// baseline version and no more than the machine's glibc (what `ldd --version` would say).
    #[cfg(all(target_os = "linux", target_env = "gnu"))]
    #[test]
    fn reads_the_glibc_versions_of_a_real_binary() {
        let exe = std::env::current_exe().unwrap();
        let names = needed_versions(&std::fs::read(&exe).unwrap()).unwrap();
        assert!(names.iter().any(|n| n.starts_with("GLIBC_2.")), "{names:?}");
        let max = max_glibc(&exe).unwrap().unwrap();
        assert!(max >= (2, 17), "{max:?}");
        let out = Command::new("getconf").arg("GNU_LIBC_VERSION").output().unwrap();
        let host = parse_glibc(&String::from_utf8_lossy(&out.stdout).trim().replace("glibc ", "GLIBC_")).unwrap();
        assert!(max <= host, "{max:?} > the machine's {host:?}");
    }

    #[test]
    fn rejects_what_is_not_a_64_bit_elf() {
        assert!(needed_versions(b"MZ\x90\x00").is_err());
        assert!(needed_versions(b"\x7fELF\x01\x01").is_err());
        assert!(needed_versions(b"\x7fELF\x02\x01").is_err());
    }
}
