//! Placeholder: see the tracer helper.
