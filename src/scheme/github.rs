//! github
