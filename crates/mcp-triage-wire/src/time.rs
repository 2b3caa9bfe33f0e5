//! RFC 3339 UTC timestamps with milliseconds (`2026-07-28T12:00:00.123Z`): the `time` of a
//! proxy record, a capture line and a kitchen journal entry.

/// Milliseconds since the Unix epoch as RFC 3339 UTC with milliseconds. Past year 9999 the
/// year grows to more digits instead of wrapping.
pub fn rfc3339(ms: u64) -> String {
    let secs = ms / 1000;
    let (days, rem) = (secs / 86_400, secs % 86_400);
    let (y, m, d) = civil_from_days(days as i64);
    let (hh, mm, ss, frac) = (rem / 3600, rem % 3600 / 60, rem % 60, ms % 1000);
    if y > 9999 {
        return format!("{y:04}-{m:02}-{d:02}T{hh:02}:{mm:02}:{ss:02}.{frac:03}Z");
    }
    // Into a fixed buffer, two digits at a time from a table: every proxy record carries a
    // timestamp, and pushing char by char with a power of ten per digit was about 1k
    // instructions per record (`format!`, before that, about 2% of the proxy's per exchange).
    let mut b = *b"0000-00-00T00:00:00.000Z";
    b[0..2].copy_from_slice(&two_digits(y as u64 / 100));
    b[2..4].copy_from_slice(&two_digits(y as u64 % 100));
    b[5..7].copy_from_slice(&two_digits(m));
    b[8..10].copy_from_slice(&two_digits(d));
    b[11..13].copy_from_slice(&two_digits(hh));
    b[14..16].copy_from_slice(&two_digits(mm));
    b[17..19].copy_from_slice(&two_digits(ss));
    b[20] = b'0' + (frac / 100) as u8;
    b[21..23].copy_from_slice(&two_digits(frac % 100));
    String::from_utf8(b.to_vec()).expect("digits and separators are ASCII")
}

/// `n` (below 100) as two decimal digits.
fn two_digits(n: u64) -> [u8; 2] {
    const PAIRS: &[u8; 200] = b"0001020304050607080910111213141516171819\
2021222324252627282930313233343536373839\
4041424344454647484950515253545556575859\
6061626364656667686970717273747576777879\
8081828384858687888990919293949596979899";
    let i = (n as usize % 100) * 2;
    [PAIRS[i], PAIRS[i + 1]]
}

/// Year, month, day of a day count since 1970-01-01 (H. Hinnant's civil-from-days, the
/// proleptic Gregorian calendar); public for writers that format a date into their own buffer
/// (the C ABI's log line).
pub fn civil_from_days(days: i64) -> (i64, u64, u64) {
    let z = days + 719_468;
    let era = z.div_euclid(146_097);
    let doe = z.rem_euclid(146_097);
    let yoe = (doe - doe / 1460 + doe / 36_524 - doe / 146_096) / 365;
    let doy = doe - (365 * yoe + yoe / 4 - yoe / 100);
    let mp = (5 * doy + 2) / 153;
    let d = (doy - (153 * mp + 2) / 5 + 1) as u64;
    let m = if mp < 10 { mp + 3 } else { mp - 9 } as u64;
    (yoe + era * 400 + i64::from(m <= 2), m, d)
}

/// Now, as milliseconds since the Unix epoch (0 when the clock is before it).
pub fn now_ms() -> u64 {
    std::time::SystemTime::now()
        .duration_since(std::time::UNIX_EPOCH)
        .map(|d| d.as_millis() as u64)
        .unwrap_or(0)
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn timestamps_are_rfc3339() {
        assert_eq!(rfc3339(0), "1970-01-01T00:00:00.000Z");
        assert_eq!(rfc3339(1_785_240_000_123), "2026-07-28T12:00:00.123Z");
        assert_eq!(rfc3339(951_782_400_000), "2000-02-29T00:00:00.000Z");
        assert_eq!(rfc3339(1_796_255_999_999), "2026-12-02T23:59:59.999Z");
        assert_eq!(rfc3339(253_402_300_799_999), "9999-12-31T23:59:59.999Z");
        assert_eq!(rfc3339(253_402_300_800_000), "10000-01-01T00:00:00.000Z");
    }

    /// The digit writer against `format!` over every field's whole range (a step through the
    /// millisecond clock that is prime to every field's period).
    #[test]
    fn the_digits_are_those_format_writes() {
        let mut ms = 0u64;
        while ms < 253_402_300_800_000 {
            let (days, rem) = ((ms / 1000) / 86_400, (ms / 1000) % 86_400);
            let (y, m, d) = civil_from_days(days as i64);
            let (hh, mm, ss, frac) = (rem / 3600, rem % 3600 / 60, rem % 60, ms % 1000);
            let want = format!("{y:04}-{m:02}-{d:02}T{hh:02}:{mm:02}:{ss:02}.{frac:03}Z");
            assert_eq!(rfc3339(ms), want, "{ms}");
            ms += 1_234_567_891;
        }
    }

    /// Every day from 1970 to 2100 against a plain day-by-day count, so the arithmetic of
    /// civil_from_days is checked, not only a few dates.
    #[test]
    fn every_day_of_two_centuries_is_right() {
        let (mut y, mut m, mut d) = (1970i64, 1u64, 1u64);
        for days in 0..(131 * 366) {
            assert_eq!(civil_from_days(days), (y, m, d), "day {days}");
            let leap = (y % 4 == 0 && y % 100 != 0) || y % 400 == 0;
            let len = [
                31,
                if leap { 29 } else { 28 },
                31,
                30,
                31,
                30,
                31,
                31,
                30,
                31,
                30,
                31,
            ];
            d += 1;
            if d > len[(m - 1) as usize] {
                d = 1;
                m += 1;
                if m > 12 {
                    m = 1;
                    y += 1;
                }
            }
        }
    }
}
