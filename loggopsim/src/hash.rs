//! The hash map of the engine and the GOAL reader. Their keys are
//! simulator-internal values (labels of one rank, handles, ranks), so HashDoS
//! resistance is not needed and SipHash would dominate the per-event cost;
//! rustc-hash's Fx hasher is the maintained fast choice. No output depends on
//! a map's iteration order.
pub type FastMap<K, V> = rustc_hash::FxHashMap<K, V>;
