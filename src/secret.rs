//! Secret values: resolved bytes that never print.

use std::fmt;

/// The bytes of one configured secret, after resolving `{ env }` / `{ file }`.
///
/// `Debug` and `Display` print `[redacted]` so a secret can't reach a log line,
/// an error message or a panic by accident.
#[derive(Clone, PartialEq, Eq)]
pub struct Secret(Vec<u8>);

impl Secret {
    pub fn new(bytes: impl Into<Vec<u8>>) -> Self {
        Secret(bytes.into())
    }

    /// The raw bytes. Callers feed them to a MAC and nowhere else.
    pub fn expose(&self) -> &[u8] {
        &self.0
    }
}

impl fmt::Debug for Secret {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.write_str("[redacted]")
    }
}

impl fmt::Display for Secret {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.write_str("[redacted]")
    }
}
