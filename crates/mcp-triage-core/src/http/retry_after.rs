use std::time::{Duration, SystemTime};

/// Parses `Retry-After` (RFC 9110 §10.2.3): delta-seconds, or an HTTP-date (IMF-fixdate and the
/// obsolete RFC 850 and asctime forms, which recipients must accept) measured against `now`.
/// A date in the past means "now" (0 ms). Anything else is `None`.
pub fn parse_retry_after(value: &str, now: SystemTime) -> Option<u64> {
    let value = value.trim();
    if !value.is_empty() && value.bytes().all(|b| b.is_ascii_digit()) {
        // Saturate absurd values instead of failing: "retry much later" is still the message.
        let secs: u64 = value.parse().unwrap_or(u64::MAX);
        return Some(secs.saturating_mul(1000));
    }
    let date = httpdate::parse_http_date(value).ok()?;
    Some(
        date.duration_since(now)
            .unwrap_or(Duration::ZERO)
            .as_millis()
            .min(u64::MAX as u128) as u64,
    )
}

#[cfg(test)]
mod tests {
    use super::*;

    fn at(secs: u64) -> SystemTime {
        SystemTime::UNIX_EPOCH + Duration::from_secs(secs)
    }

    #[test]
    fn delta_seconds() {
        assert_eq!(parse_retry_after("2", at(0)), Some(2000));
        assert_eq!(parse_retry_after(" 0 ", at(0)), Some(0));
        assert_eq!(parse_retry_after("-1", at(0)), None);
        assert_eq!(parse_retry_after("1.5", at(0)), None);
        assert_eq!(
            parse_retry_after("99999999999999999999999", at(0)),
            Some(u64::MAX)
        );
    }

    #[test]
    fn http_dates() {
        // 784111777 = Sun, 06 Nov 1994 08:49:37 GMT
        let now = at(784_111_777 - 30);
        assert_eq!(
            parse_retry_after("Sun, 06 Nov 1994 08:49:37 GMT", now),
            Some(30_000)
        );
        assert_eq!(
            parse_retry_after("Sunday, 06-Nov-94 08:49:37 GMT", now),
            Some(30_000)
        );
        assert_eq!(
            parse_retry_after("Sun Nov  6 08:49:37 1994", now),
            Some(30_000)
        );
        assert_eq!(
            parse_retry_after("Sun, 06 Nov 1994 08:49:37 GMT", at(784_111_777 + 5)),
            Some(0)
        );
        assert_eq!(parse_retry_after("tomorrow", now), None);
        assert_eq!(parse_retry_after("", now), None);
    }
}
