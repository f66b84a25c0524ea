//! generic
