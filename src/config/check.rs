//! The problem collector: [`Check`] records every problem with its line and
//! field, and reads the values every table shares (words, durations,
//! numbers, addresses, header names, JSON pointers, files, secrets).

use std::collections::HashSet;
use std::net::SocketAddr;
use std::ops::Range;
use std::path::PathBuf;
use std::time::Duration;

use http::HeaderName;
use toml::Spanned;

use super::raw::{self, RawSecret};
use super::{Problem, SecretSource, duration};
use crate::allow::{self, Ranges};
use crate::secret::Secret;

pub(super) struct Check<'a> {
    pub(super) lines: raw::Lines,
    pub(super) secrets: &'a dyn SecretSource,
    pub(super) problems: Vec<Problem>,
    /// Fields whose value was refused while deserializing.
    pub(super) poisoned: HashSet<String>,
    /// Request headers named with `_` are dropped on arrival
    /// (`server.underscores_in_headers`), so no source may read one.
    pub(super) drops_underscores: bool,
}

impl Check<'_> {
    pub(super) fn push(
        &mut self,
        span: Option<Range<usize>>,
        field: &str,
        message: impl Into<String>,
    ) {
        self.problems.push(Problem {
            line: span.map(|s| self.lines.line(s.start)),
            field: field.to_owned(),
            message: message.into(),
        });
    }

    pub(super) fn at<T>(&mut self, value: &Spanned<T>, field: &str, message: impl Into<String>) {
        self.push(Some(value.span()), field, message);
    }

    /// A key that must be present: reported missing (at its table's line)
    /// unless its value was already refused.
    pub(super) fn required<'v, T>(
        &mut self,
        value: &'v Option<Spanned<T>>,
        table: Option<Range<usize>>,
        field: &str,
    ) -> Option<&'v Spanned<T>> {
        if value.is_none() && !self.poisoned.contains(field) {
            self.push(table, field, "required key is missing");
        }
        value.as_ref()
    }

    /// One of a fixed set of words, or `default` when absent.
    pub(super) fn word<T: Copy>(
        &mut self,
        value: Option<&Spanned<String>>,
        field: &str,
        choices: &[(&str, T)],
        default: Option<T>,
    ) -> Option<T> {
        let Some(v) = value else {
            return if self.poisoned.contains(field) {
                None
            } else {
                default
            };
        };
        if let Some((_, t)) = choices.iter().find(|(w, _)| *w == v.get_ref().as_str()) {
            return Some(*t);
        }
        let words: Vec<String> = choices.iter().map(|(w, _)| format!("\"{w}\"")).collect();
        let expected = match words.as_slice() {
            [a, b] => format!("{a} or {b}"),
            _ => format!("one of {}", words.join(", ")),
        };
        self.at(
            v,
            field,
            format!("unknown value \"{}\"; expected {expected}", v.get_ref()),
        );
        None
    }

    pub(super) fn duration(
        &mut self,
        value: Option<&Spanned<String>>,
        field: &str,
        default: Duration,
    ) -> Option<Duration> {
        let Some(v) = value else {
            return Some(default);
        };
        match duration::parse_nonzero(v.get_ref()) {
            Ok(d) => Some(d),
            Err(m) => {
                self.at(v, field, m);
                None
            }
        }
    }

    /// A duration inside `range`, or the default when absent.
    pub(super) fn duration_within(
        &mut self,
        value: Option<&Spanned<String>>,
        field: &str,
        default: Duration,
        range: std::ops::RangeInclusive<Duration>,
    ) -> Option<Duration> {
        let d = self.duration(value, field, default)?;
        if let Some(v) = value
            && !range.contains(&d)
        {
            self.at(
                v,
                field,
                format!(
                    "\"{}\" is out of range: give {} to {}",
                    v.get_ref(),
                    humantime_secs(*range.start()),
                    humantime_secs(*range.end())
                ),
            );
            return None;
        }
        Some(d)
    }

    pub(super) fn positive(
        &mut self,
        value: Option<&Spanned<i64>>,
        field: &str,
        default: usize,
    ) -> Option<usize> {
        let Some(v) = value else {
            return Some(default);
        };
        match usize::try_from(*v.get_ref()) {
            Ok(n) if n > 0 => Some(n),
            _ => {
                self.at(
                    v,
                    field,
                    format!("must be greater than zero (got {})", v.get_ref()),
                );
                None
            }
        }
    }

    pub(super) fn socket_addr(&mut self, v: &Spanned<String>, field: &str) -> Option<SocketAddr> {
        match v.get_ref().parse() {
            Ok(a) => Some(a),
            Err(_) => {
                self.at(
                    v,
                    field,
                    format!(
                        "\"{}\" is not an IP address and port such as \"0.0.0.0:8080\" \
                         (host names are not resolved)",
                        v.get_ref()
                    ),
                );
                None
            }
        }
    }

    pub(super) fn header_name(&mut self, v: &Spanned<String>, field: &str) -> Option<HeaderName> {
        match HeaderName::from_bytes(v.get_ref().as_bytes()) {
            Ok(h) if self.drops_underscores && h.as_str().contains('_') => {
                self.at(
                    v,
                    field,
                    format!(
                        "\"{}\" holds _, and such headers are dropped on arrival; \
                         set server.underscores_in_headers = \"forward\" to read it",
                        v.get_ref()
                    ),
                );
                None
            }
            Ok(h) => Some(h),
            Err(_) => {
                self.at(
                    v,
                    field,
                    format!("\"{}\" is not a valid HTTP header name", v.get_ref()),
                );
                None
            }
        }
    }

    pub(super) fn json_pointer(&mut self, v: &Spanned<String>, field: &str) -> Option<String> {
        match pointer_problem(v.get_ref()) {
            None => Some(v.get_ref().clone()),
            Some(m) => {
                self.at(v, field, m);
                None
            }
        }
    }

    /// A list of IP ranges (`allow_ips`, `trusted_proxies`): every entry is
    /// checked, each problem reported at its own line as `field[i]`.
    pub(super) fn ip_ranges(
        &mut self,
        list: &Spanned<Vec<Spanned<String>>>,
        field: &str,
    ) -> Option<Ranges> {
        let mut nets = Some(Vec::new());
        for (i, entry) in list.get_ref().iter().enumerate() {
            match (allow::parse_range(entry.get_ref()), &mut nets) {
                (Ok(net), Some(nets)) => nets.push(net),
                (Ok(_), None) => {}
                (Err(m), _) => {
                    self.at(entry, &format!("{field}[{i}]"), m);
                    nets = None;
                }
            }
        }
        nets.map(Ranges::new)
    }

    /// A file that must be readable (TLS material).
    pub(super) fn readable_path(&mut self, v: &Spanned<String>, field: &str) -> Option<PathBuf> {
        let text = v.get_ref();
        if text.is_empty() {
            self.at(v, field, "is empty; give a file path");
            return None;
        }
        let path = PathBuf::from(text);
        match self.secrets.file(&path) {
            Ok(_) => Some(path),
            Err(e) => {
                self.at(v, field, format!("cannot read {text}: {e}"));
                None
            }
        }
    }
}

/// `d` as whole seconds (`"30s"`), or milliseconds below a second.
pub(super) fn humantime_secs(d: Duration) -> String {
    if d.subsec_millis() == 0 && d.as_secs() > 0 {
        format!("{}s", d.as_secs())
    } else {
        format!("{}ms", d.as_millis())
    }
}

/// Why `p` is not a JSON pointer (RFC 6901), if it is not one.
pub(super) fn pointer_problem(p: &str) -> Option<String> {
    if !p.is_empty() && !p.starts_with('/') {
        return Some(format!(
            "\"{p}\" is not a JSON pointer: it must start with / (e.g. \"/data/object/id\")"
        ));
    }
    let bytes = p.as_bytes();
    for (i, b) in bytes.iter().enumerate() {
        if *b == b'~' && !matches!(bytes.get(i + 1), Some(b'0' | b'1')) {
            return Some(format!(
                "\"{p}\" is not a JSON pointer: ~ must be followed by 0 or 1 (~0 is ~, ~1 is /)"
            ));
        }
    }
    None
}

/// Resolves one `secrets` entry. Returns the secret and a prefix naming
/// where it came from, for messages about its shape. Never quotes a value.
pub(super) fn resolve_secret(
    c: &mut Check<'_>,
    entry: &Spanned<RawSecret>,
    field: &str,
    files: &mut Vec<PathBuf>,
) -> Option<(Secret, String)> {
    match entry.get_ref() {
        RawSecret::Literal(s) if s.is_empty() => {
            c.at(entry, field, "is an empty string");
            None
        }
        RawSecret::Literal(s) => Some((Secret::new(s.as_bytes()), String::new())),
        RawSecret::Env(name) if name.is_empty() => {
            c.at(
                entry,
                field,
                r#"env needs a variable name: { env = "NAME" }"#,
            );
            None
        }
        RawSecret::Env(name) => match c.secrets.env(name) {
            None => {
                c.at(
                    entry,
                    field,
                    format!("environment variable {name} is not set"),
                );
                None
            }
            Some(v) if v.is_empty() => {
                c.at(
                    entry,
                    field,
                    format!("environment variable {name} is empty"),
                );
                None
            }
            Some(v) => Some((
                Secret::new(v.into_bytes()),
                format!("environment variable {name}: "),
            )),
        },
        RawSecret::File(path) if path.is_empty() => {
            c.at(entry, field, r#"file needs a path: { file = "PATH" }"#);
            None
        }
        RawSecret::File(path) => {
            let p = PathBuf::from(path);
            if !files.contains(&p) {
                files.push(p.clone());
            }
            match c.secrets.file(&p) {
                Err(e) => {
                    c.at(entry, field, format!("cannot read secret file {path}: {e}"));
                    None
                }
                Ok(mut bytes) => {
                    while bytes.last() == Some(&b'\n') {
                        bytes.pop();
                        if bytes.last() == Some(&b'\r') {
                            bytes.pop();
                        }
                    }
                    if bytes.is_empty() {
                        c.at(entry, field, format!("secret file {path} is empty"));
                        None
                    } else {
                        Some((Secret::new(bytes), format!("secret file {path}: ")))
                    }
                }
            }
        }
        RawSecret::Invalid(m) => {
            c.at(entry, field, *m);
            None
        }
    }
}
