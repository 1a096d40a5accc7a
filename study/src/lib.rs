//! Placeholder: the efficiency study.
