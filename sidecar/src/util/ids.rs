//! Random ids (session ids, request ids, completion ids) without a RNG dependency.

use std::sync::atomic::{AtomicU64, Ordering};

pub fn random_u64() -> u64 {
    use std::hash::{BuildHasher, Hasher};
    // RandomState is seeded from the OS per process; mixing a counter and the time gives distinct
    // values per call without a dependency on a RNG crate.
    static COUNTER: AtomicU64 = AtomicU64::new(0);
    let mut h = std::collections::hash_map::RandomState::new().build_hasher();
    h.write_u64(COUNTER.fetch_add(1, Ordering::Relaxed));
    h.write_u128(std::time::SystemTime::now().duration_since(std::time::UNIX_EPOCH).map(|d| d.as_nanos()).unwrap_or(0));
    h.finish()
}
