//! Clocks and calendars: the one RFC 3339 parser, the one HTTP-date parser,
//! the civil-date arithmetic under both, and the wall clock as the rest of
//! hookgate reads it.
//!
//! Dates are proleptic Gregorian in UTC; no time zone database is needed
//! because every format hookgate reads carries its offset (or means UTC).

use std::time::{SystemTime, UNIX_EPOCH};

/// Whether an RFC 3339 time must carry `Z` or an offset.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Zone {
    /// RFC 3339 proper (resource versions).
    Required,
    /// No zone means UTC: some senders write their signed times that way.
    Optional,
}

/// `YYYY-MM-DDTHH:MM:SS[.fraction](Z|±HH:MM)` as unix nanoseconds. `t` and
/// `z` may be lower case and the `T` a space (RFC 3339 §5.6 allows both).
/// Leap seconds (`:60`) count as the next second. Fraction digits past the
/// ninth are dropped.
pub fn rfc3339_nanos(text: &[u8], zone: Zone) -> Option<i128> {
    let b = text;
    if b.len() < 19 {
        return None;
    }
    let num = |range: std::ops::Range<usize>| -> Option<i64> {
        let part = b.get(range)?;
        if part.is_empty() || !part.iter().all(u8::is_ascii_digit) {
            return None;
        }
        std::str::from_utf8(part).ok()?.parse().ok()
    };
    let (year, month, day) = (num(0..4)?, num(5..7)?, num(8..10)?);
    let (hour, minute, second) = (num(11..13)?, num(14..16)?, num(17..19)?);
    if b[4] != b'-' || b[7] != b'-' || !matches!(b[10], b'T' | b't' | b' ') {
        return None;
    }
    if b[13] != b':' || b[16] != b':' {
        return None;
    }
    if !(1..=12).contains(&month)
        || day < 1
        || day > days_in_month(year, month)
        || hour > 23
        || minute > 59
        || second > 60
    {
        return None;
    }
    let mut i = 19;
    let mut nanos: i64 = 0;
    if b.get(i) == Some(&b'.') {
        i += 1;
        let start = i;
        while b.get(i).is_some_and(u8::is_ascii_digit) {
            if i - start < 9 {
                nanos = nanos * 10 + i64::from(b[i] - b'0');
            }
            i += 1;
        }
        let n = i - start;
        if n == 0 {
            return None;
        }
        for _ in n..9 {
            nanos *= 10;
        }
    }
    let offset_secs: i64 = match b.get(i) {
        None if zone == Zone::Optional => 0,
        Some(b'Z' | b'z') if i + 1 == b.len() => 0,
        Some(sign @ (b'+' | b'-')) if i + 6 == b.len() && b[i + 3] == b':' => {
            let oh = num(i + 1..i + 3)?;
            let om = num(i + 4..i + 6)?;
            if oh > 23 || om > 59 {
                return None;
            }
            let o = oh * 3600 + om * 60;
            if *sign == b'-' { -o } else { o }
        }
        _ => return None,
    };
    let days = days_from_civil(year, month, day);
    let secs = days * 86_400 + hour * 3600 + minute * 60 + second - offset_secs;
    Some(i128::from(secs) * 1_000_000_000 + i128::from(nanos))
}

/// [`rfc3339_nanos`] in whole unix seconds (the fraction dropped).
pub fn rfc3339_secs(text: &[u8], zone: Zone) -> Option<i64> {
    rfc3339_nanos(text, zone).and_then(|n| i64::try_from(n.div_euclid(1_000_000_000)).ok())
}

/// `timestamp` (unix seconds) as `YYYY-MM-DDTHH:MM:SSZ`.
pub fn format_rfc3339(timestamp: i64) -> String {
    let (y, m, d) = civil_from_days(timestamp.div_euclid(86_400));
    let secs = timestamp.rem_euclid(86_400);
    format!(
        "{y:04}-{m:02}-{d:02}T{:02}:{:02}:{:02}Z",
        secs / 3600,
        secs / 60 % 60,
        secs % 60
    )
}

const DAYS: [&str; 7] = ["Sun", "Mon", "Tue", "Wed", "Thu", "Fri", "Sat"];
const MONTHS: [&str; 12] = [
    "Jan", "Feb", "Mar", "Apr", "May", "Jun", "Jul", "Aug", "Sep", "Oct", "Nov", "Dec",
];

/// An IMF-fixdate (`Sun, 06 Nov 1994 08:49:37 GMT`, RFC 9110 §5.6.7) as unix
/// seconds. The day name is checked for shape only; the date itself goes
/// through the RFC 3339 parser, which rejects impossible days.
pub fn parse_http_date(text: &[u8]) -> Option<i64> {
    let text = std::str::from_utf8(text).ok()?;
    let rest = text.strip_suffix(" GMT")?;
    let (day_name, rest) = rest.split_once(", ")?;
    if !DAYS.contains(&day_name) {
        return None;
    }
    let mut parts = rest.split(' ');
    let (day, month, year, time) = (parts.next()?, parts.next()?, parts.next()?, parts.next()?);
    if parts.next().is_some() || day.len() != 2 || year.len() != 4 || time.len() != 8 {
        return None;
    }
    let month = MONTHS.iter().position(|m| *m == month)? + 1;
    let rfc3339 = format!("{year}-{month:02}-{day}T{time}Z");
    rfc3339_secs(rfc3339.as_bytes(), Zone::Required)
}

/// `timestamp` (unix seconds) as an IMF-fixdate.
pub fn format_http_date(timestamp: i64) -> String {
    let (y, m, d) = civil_from_days(timestamp.div_euclid(86_400));
    let secs = timestamp.rem_euclid(86_400);
    let weekday = DAYS
        .get(usize::try_from((timestamp.div_euclid(86_400) + 4).rem_euclid(7)).unwrap_or(0))
        .copied()
        .unwrap_or("Thu");
    let month = usize::try_from(m - 1)
        .ok()
        .and_then(|i| MONTHS.get(i))
        .copied()
        .unwrap_or("Jan");
    format!(
        "{weekday}, {d:02} {month} {y:04} {:02}:{:02}:{:02} GMT",
        secs / 3600,
        secs / 60 % 60,
        secs % 60
    )
}

fn is_leap(year: i64) -> bool {
    (year % 4 == 0 && year % 100 != 0) || year % 400 == 0
}

fn days_in_month(year: i64, month: i64) -> i64 {
    match month {
        2 if is_leap(year) => 29,
        2 => 28,
        4 | 6 | 9 | 11 => 30,
        _ => 31,
    }
}

/// Days since 1970-01-01 of a proleptic Gregorian date (Howard Hinnant's
/// `days_from_civil`).
pub fn days_from_civil(year: i64, month: i64, day: i64) -> i64 {
    let y = if month <= 2 { year - 1 } else { year };
    let era = y.div_euclid(400);
    let yoe = y - era * 400;
    let mp = (month + 9) % 12;
    let doy = (153 * mp + 2) / 5 + day - 1;
    let doe = yoe * 365 + yoe / 4 - yoe / 100 + doy;
    era * 146_097 + doe - 719_468
}

/// The inverse of [`days_from_civil`]: (year, month, day).
pub fn civil_from_days(days: i64) -> (i64, i64, i64) {
    let z = days + 719_468;
    let era = z.div_euclid(146_097);
    let doe = z - era * 146_097;
    let yoe = (doe - doe / 1460 + doe / 36_524 - doe / 146_096) / 365;
    let doy = doe - (365 * yoe + yoe / 4 - yoe / 100);
    let mp = (5 * doy + 2) / 153;
    let d = doy - (153 * mp + 2) / 5 + 1;
    let m = if mp < 10 { mp + 3 } else { mp - 9 };
    let y = yoe + era * 400 + i64::from(m <= 2);
    (y, m, d)
}

/// Unix seconds now (0 before 1970, which no clock here reads).
pub fn unix_now() -> i64 {
    SystemTime::now()
        .duration_since(UNIX_EPOCH)
        .map(|d| i64::try_from(d.as_secs()).unwrap_or(i64::MAX))
        .unwrap_or(0)
}

/// Unix seconds now, with the fraction.
pub fn unix_now_f64() -> f64 {
    SystemTime::now()
        .duration_since(UNIX_EPOCH)
        .map(|d| d.as_secs_f64())
        .unwrap_or(0.0)
}

/// Unix milliseconds now.
pub fn now_ms() -> i64 {
    SystemTime::now()
        .duration_since(UNIX_EPOCH)
        .map(|d| i64::try_from(d.as_millis()).unwrap_or(i64::MAX))
        .unwrap_or(0)
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn rfc3339_with_fractions_and_offsets() {
        let n = |s: &str| rfc3339_nanos(s.as_bytes(), Zone::Required);
        assert_eq!(n("1970-01-01T00:00:00Z"), Some(0));
        assert_eq!(n("1970-01-01T00:00:01.5Z"), Some(1_500_000_000));
        assert_eq!(n("1970-01-01t01:00:00+01:00"), Some(0));
        assert_eq!(n("1970-01-01 00:00:00-00:30"), Some(1_800_000_000_000));
        assert_eq!(
            n("2024-02-29T12:00:00.1234567891Z").map(|v| v % 1_000_000_000),
            Some(123_456_789)
        );
        for bad in [
            "2023-02-29T00:00:00Z",
            "2024-13-01T00:00:00Z",
            "2024-01-01T24:00:00Z",
            "2024-01-01T00:00:00",
            "2024-01-01T00:00:00.Z",
            "2024-01-01T00:00:00+1:00",
        ] {
            assert_eq!(n(bad), None, "{bad}");
        }
        assert_eq!(
            rfc3339_secs(b"2024-01-01T00:00:00", Zone::Optional),
            Some(1_704_067_200)
        );
    }

    #[test]
    fn http_dates_round_trip() {
        assert_eq!(
            parse_http_date(b"Sun, 06 Nov 1994 08:49:37 GMT"),
            Some(784_111_777)
        );
        assert_eq!(
            format_http_date(784_111_777),
            "Sun, 06 Nov 1994 08:49:37 GMT"
        );
        for bad in [
            &b"Sun, 6 Nov 1994 08:49:37 GMT"[..],
            b"Sunday, 06-Nov-94 08:49:37 GMT",
            b"Sun, 31 Feb 1994 08:49:37 GMT",
        ] {
            assert_eq!(parse_http_date(bad), None);
        }
        assert_eq!(format_rfc3339(784_111_777), "1994-11-06T08:49:37Z");
    }

    #[test]
    fn civil_days_both_ways() {
        for days in [-719_468, -1, 0, 1, 10_957, 19_723, 2_932_896] {
            let (y, m, d) = civil_from_days(days);
            assert_eq!(days_from_civil(y, m, d), days);
        }
        assert_eq!(civil_from_days(0), (1970, 1, 1));
    }
}
