//! Model picker: `models/list` on a cold sidecar, with the model cache of an earlier run and without.

use std::sync::Arc;
use std::time::Duration;

use anyhow::{bail, Result};
use serde_json::json;

use crate::bench::report::{Row, Target, Unit};
use crate::bench::sidecar::Sidecar;
use crate::bench::{lock_retiring, scratch, since, Ctx};

/// `CURSOR_DOUBLE_MODELS_DELAY_MS` for the model-picker figure.
const MODELS_DELAY_MS: u64 = 2500;

/// `models/list` on a cold sidecar with and without the model cache of an earlier run.
pub fn measure(ctx: &Ctx) -> Result<Vec<Row>> {
    let (bins, plan) = (ctx.bins, ctx.plan);
    let env = [("CURSOR_DOUBLE_MODELS_DELAY_MS", MODELS_DELAY_MS.to_string())];
    let list = |sc: &mut Sidecar| -> Result<f64> {
        let (result, sent, answered) = sc.request("models/list", json!({}), Duration::from_secs(30))?;
        let n = result["models"].as_array().map_or(0, Vec::len);
        if n == 0 {
            bail!("models/list returned no models: {result}");
        }
        Ok(since(answered, sent))
    };
    let (mut cold, mut cached) = (Vec::new(), Vec::new());
    let mut retiring = Vec::new();
    for _ in 0..plan.models_cold {
        // Shared with the sidecars that read its cache, which may outlive this loop (below).
        let earlier = Arc::new(scratch()?);
        {
            let mut sc = Sidecar::launch(bins, earlier.path(), None, &env)?;
            sc.initialize(json!({}))?;
            cold.push(list(&mut sc)?);
        }
        let state = earlier.path().join("state");
        if !state.join("models.json").is_file() {
            bail!("the sidecar left no model cache in {}", state.display());
        }
        for _ in 0..plan.models_cached_per_cold {
            let dir = scratch()?;
            let mut sc = Sidecar::launch(bins, dir.path(), Some(&state), &env)?;
            sc.initialize(json!({}))?;
            cached.push(list(&mut sc)?);
            // Its exit waits for the background check of the cached list (a `models` call): let
            // it end on the side, then remove its folders.
            let earlier = earlier.clone();
            retiring.push(std::thread::spawn(move || drop((sc, dir, earlier))));
        }
    }
    if plan.smoke {
        // Let them end while the other figures run (smoke figures are not compared).
        lock_retiring().extend(retiring);
    } else {
        for r in retiring {
            let _ = r.join();
        }
    }
    Ok(vec![Row::new("model picker", "models/list, cold sidecar with disk cache", Unit::Ms, &cached)
        .reference("cold sidecar without cache", &cold)
        .target(Target::below(10.0, "≤ 10 ms median"))
        .note(format!(
            "Double's `models` takes {MODELS_DELAY_MS} ms. Timed from the request (sent right after `initialize` answered) to the answer. The cache is the state folder (`CURSOR_BRIDGE_STATE_DIR`) of an earlier run."
        ))])
}
