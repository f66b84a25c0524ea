//! slack
