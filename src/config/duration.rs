//! Durations written as strings: `"300ms"`, `"5m"`, `"24h"`, `"1h 30m"`.

use std::time::Duration;

/// Parses a duration string. The error says what was wrong and what is expected.
pub fn parse(text: &str) -> Result<Duration, String> {
    let trimmed = text.trim();
    if trimmed.is_empty() {
        return Err(r#"is empty; write a duration such as "300ms", "5m" or "24h""#.to_owned());
    }
    humantime::parse_duration(trimmed).map_err(|e| {
        format!(r#""{text}" is not a duration ({e}); write e.g. "300ms", "5m" or "24h""#)
    })
}

/// Parses a duration that must be longer than zero.
pub fn parse_nonzero(text: &str) -> Result<Duration, String> {
    let d = parse(text)?;
    if d.is_zero() {
        Err(format!(
            r#""{text}" is zero; this duration must be longer than zero"#
        ))
    } else {
        Ok(d)
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn units() {
        assert_eq!(parse("300ms"), Ok(Duration::from_millis(300)));
        assert_eq!(parse("5m"), Ok(Duration::from_secs(300)));
        assert_eq!(parse("24h"), Ok(Duration::from_secs(86_400)));
        assert_eq!(parse("1h 30m"), Ok(Duration::from_secs(5_400)));
        assert_eq!(parse(" 10s "), Ok(Duration::from_secs(10)));
    }

    #[test]
    fn errors_name_the_text() {
        let e = parse("5").expect_err("no unit");
        assert!(e.contains("\"5\" is not a duration"), "{e}");
        let e = parse("five minutes").expect_err("words");
        assert!(e.contains("\"five minutes\""), "{e}");
        assert!(parse("").expect_err("empty").contains("empty"));
    }

    #[test]
    fn zero() {
        assert_eq!(parse("0s"), Ok(Duration::ZERO));
        assert!(parse_nonzero("0s").expect_err("zero").contains("zero"));
        assert_eq!(parse_nonzero("1ms"), Ok(Duration::from_millis(1)));
    }
}
