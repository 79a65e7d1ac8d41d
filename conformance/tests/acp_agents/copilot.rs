//! GitHub Copilot CLI as an ACP agent, offline: its BYOK environment
//! (`acp_conformance::copilot`) pointed at the fake model.

use std::path::Path;

use acp_conformance::copilot::{self, Provider, BASE_ARGS};
use acp_conformance::fake_model::{FakeModel, MODEL_ID};

use crate::client::Launch;

pub fn launch(binary: &Path, home: &Path, cwd: &Path, model: &FakeModel) -> Launch {
    let base_url = model.base_url();
    let provider = Provider { base_url: &base_url, api_key: "not-a-real-key", model: MODEL_ID };
    Launch {
        program: binary.to_path_buf(),
        args: std::iter::once("--acp").chain(BASE_ARGS).map(String::from).collect(),
        env: copilot::environment(home, &provider),
        cwd: cwd.to_path_buf(),
    }
}
