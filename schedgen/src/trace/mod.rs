//! liballprof traces: reading lines ([`reader`]) and translating them to
//! GOAL ([`translate()`]), docs/model/schedgen.md section 4 plus the extensions listed in
//! docs/schedgen.md.
pub mod reader;
pub mod translate;

pub use reader::{Call, TraceError};
pub use translate::{
    trace_file_names, translate, Compute, TraceOptions, Translation, COMPUTE_NAMES,
};
