//! GitHub Copilot CLI (`@github/copilot`, pinned and installed by `cargo xtask conformance`) as
//! the tests run it: "bring your own key" mode against an OpenAI-compatible server of ours
//! (`copilot help providers`), `COPILOT_OFFLINE` so it contacts nothing else, no auto-update, no
//! telemetry, and a fresh home of its own so no login, setting or session of this machine plays a
//! part. The two test targets that run Copilot take their environment from here: `acp_agents` (the agent over ACP,
//! the fake model behind it) and `copilot_byok` (`copilot -p`, `cursor-bridge serve` behind it).

use std::path::{Path, PathBuf};

/// The native `copilot` binary (`node_modules/@github/copilot-<platform>/copilot`), which
/// `cargo xtask conformance` installs and names here.
pub const BINARY_VAR: &str = "CURSOR_BRIDGE_CONFORMANCE_COPILOT";

pub fn binary() -> Option<PathBuf> {
    std::env::var_os(BINARY_VAR).filter(|v| !v.is_empty()).map(PathBuf::from)
}

/// The message of a test that cannot run without the binary.
pub fn missing_binary() -> String {
    format!(
        "{BINARY_VAR} is not set: it names the Copilot CLI's native binary (`cargo xtask conformance` installs the \
         pinned @github/copilot and sets it)"
    )
}

/// Where the provider is and what Copilot sends it.
pub struct Provider<'a> {
    /// The OpenAI base URL (`http://127.0.0.1:PORT/v1`).
    pub base_url: &'a str,
    /// Sent as `Authorization: Bearer …` (the openai provider type).
    pub api_key: &'a str,
    /// The model id sent in every request.
    pub model: &'a str,
}

/// The whole environment of a Copilot process (nothing is inherited: a `GH_TOKEN` or
/// `OPENAI_API_KEY` of the machine must not reach it), its home being `home`.
pub fn environment(home: &Path, provider: &Provider) -> Vec<(String, String)> {
    let dir = |name: &str| home.join(name).display().to_string();
    // Copilot writes its temporary files under TMPDIR: keep them in its home.
    let _ = std::fs::create_dir_all(home.join("tmp"));
    let mut env = vec![
        ("HOME".to_string(), home.display().to_string()),
        ("XDG_CONFIG_HOME".into(), dir(".config")),
        ("XDG_STATE_HOME".into(), dir(".local/state")),
        ("XDG_DATA_HOME".into(), dir(".local/share")),
        ("XDG_CACHE_HOME".into(), dir(".cache")),
        ("TMPDIR".into(), dir("tmp")),
        ("LANG".into(), "C.UTF-8".into()),
        ("TERM".into(), "dumb".into()),
        ("COPILOT_PROVIDER_TYPE".into(), "openai".into()),
        ("COPILOT_PROVIDER_BASE_URL".into(), provider.base_url.into()),
        ("COPILOT_PROVIDER_API_KEY".into(), provider.api_key.into()),
        ("COPILOT_MODEL".into(), provider.model.into()),
        ("COPILOT_OFFLINE".into(), "true".into()),
        ("COPILOT_AUTO_UPDATE".into(), "false".into()),
    ];
    // Its shell tool needs a PATH (and only that of the machine).
    if let Some(path) = std::env::var_os("PATH") {
        env.push(("PATH".into(), path.to_string_lossy().into_owned()));
    }
    env
}

/// The flags every run gets: the bundled version only, no telemetry of ours.
pub const BASE_ARGS: [&str; 2] = ["--no-auto-update", "--disable-client-telemetry"];
