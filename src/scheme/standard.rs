//! standard
