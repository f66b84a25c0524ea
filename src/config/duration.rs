//! durations
