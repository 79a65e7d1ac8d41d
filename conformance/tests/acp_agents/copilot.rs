//! GitHub Copilot CLI (`@github/copilot`) as an ACP agent, offline: "bring your own key" mode
//! against the fake model (an OpenAI provider at its base URL), `COPILOT_OFFLINE` so it contacts
//! nothing else, no auto-update, no telemetry, and a fresh home of its own so no login, setting
//! or session of this machine plays a part.

use std::path::{Path, PathBuf};

use acp_conformance::fake_model::{FakeModel, MODEL_ID};

use crate::client::Launch;

/// The native `copilot` binary (`node_modules/@github/copilot-<platform>/copilot`), which
/// `cargo xtask test` installs and names here.
pub const BINARY_VAR: &str = "CURSOR_BRIDGE_CONFORMANCE_COPILOT";

pub fn binary() -> Option<PathBuf> {
    std::env::var_os(BINARY_VAR).filter(|v| !v.is_empty()).map(PathBuf::from)
}

pub fn launch(binary: &Path, home: &Path, cwd: &Path, model: &FakeModel) -> Launch {
    let dir = |name: &str| home.join(name).display().to_string();
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
        ("COPILOT_PROVIDER_BASE_URL".into(), model.base_url()),
        ("COPILOT_PROVIDER_API_KEY".into(), "not-a-real-key".into()),
        ("COPILOT_MODEL".into(), MODEL_ID.into()),
        ("COPILOT_OFFLINE".into(), "true".into()),
        ("COPILOT_AUTO_UPDATE".into(), "false".into()),
    ];
    // Its shell tool needs a PATH (and only that of the machine).
    if let Some(path) = std::env::var_os("PATH") {
        env.push(("PATH".into(), path.to_string_lossy().into_owned()));
    }
    Launch {
        program: binary.to_path_buf(),
        args: ["--acp", "--no-auto-update", "--disable-client-telemetry"].map(String::from).to_vec(),
        env,
        cwd: cwd.to_path_buf(),
    }
}
