//! Routing: the longest path prefix, on a segment boundary, picks the source.
//!
//! `/webhooks/stripe` matches `/webhooks/stripe` and `/webhooks/stripe/x`,
//! never `/webhooks/stripe-test`.

use crate::config::Source;

/// Source paths sorted longest first, so the first match is the longest.
#[derive(Debug, Clone)]
pub struct Router {
    /// (path, index into the config's sources), longest path first.
    by_length: Vec<(String, usize)>,
}

impl Router {
    pub fn new(sources: &[Source]) -> Self {
        Self::from_paths(sources.iter().map(|s| s.path.as_str()))
    }

    fn from_paths<'a>(paths: impl Iterator<Item = &'a str>) -> Self {
        let mut by_length: Vec<(String, usize)> =
            paths.enumerate().map(|(i, p)| (p.to_owned(), i)).collect();
        by_length.sort_by_key(|(path, _)| std::cmp::Reverse(path.len()));
        Router { by_length }
    }

    /// The index of the source serving `path`, if any.
    pub fn route(&self, path: &str) -> Option<usize> {
        self.by_length
            .iter()
            .find(|(prefix, _)| matches_prefix(prefix, path))
            .map(|(_, i)| *i)
    }
}

fn matches_prefix(prefix: &str, path: &str) -> bool {
    if prefix == "/" {
        return true;
    }
    match path.strip_prefix(prefix) {
        Some(rest) => rest.is_empty() || rest.starts_with('/'),
        None => false,
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn router(paths: &[&str]) -> Router {
        Router::from_paths(paths.iter().copied())
    }

    #[test]
    fn segment_boundaries() {
        let r = router(&["/webhooks/stripe", "/webhooks"]);
        assert_eq!(r.route("/webhooks/stripe"), Some(0));
        assert_eq!(r.route("/webhooks/stripe/x"), Some(0));
        assert_eq!(r.route("/webhooks/stripe-test"), Some(1));
        assert_eq!(r.route("/webhooks"), Some(1));
        assert_eq!(r.route("/webhooksx"), None);
        assert_eq!(r.route("/other"), None);
    }

    #[test]
    fn longest_prefix_wins_whatever_the_order() {
        let r = router(&["/a", "/a/b/c", "/a/b"]);
        assert_eq!(r.route("/a/b/c/d"), Some(1));
        assert_eq!(r.route("/a/b/x"), Some(2));
        assert_eq!(r.route("/a/x"), Some(0));
    }

    #[test]
    fn root_catches_everything() {
        let r = router(&["/", "/github"]);
        assert_eq!(r.route("/github/x"), Some(1));
        assert_eq!(r.route("/anything"), Some(0));
    }
}
