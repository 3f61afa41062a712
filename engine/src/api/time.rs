//! Times as the answers write them: ISO 8601 with the UTC offset `+00:00`, to the second
//! (`2026-11-27T18:00:00+00:00`), made without chrono's calendar accessors on the hot paths of
//! listings and navigation.

/// [`crate::core::clock::iso`] without going through a format string: `2026-01-01T12:00:00+00:00`.
pub fn iso(t: &chrono::DateTime<chrono::Utc>) -> String {
    use chrono::Timelike;
    iso_parts(t.timestamp(), t.nanosecond()).unwrap_or_else(|| crate::core::clock::iso(t))
}

/// [`iso`] of the time `secs` seconds and `nanos` nanoseconds after the epoch (`None` for
/// years outside 0–9999 or a leap second, which [`crate::core::clock::iso`] writes).
pub fn iso_parts(secs: i64, nanos: u32) -> Option<String> {
    iso_bytes(secs, nanos).map(|b| b.iter().map(|&c| char::from(c)).collect())
}

/// [`iso_parts`] as ASCII bytes.
pub fn iso_bytes(secs: i64, nanos: u32) -> Option<[u8; 25]> {
    // Days since 1970-01-01 to the civil date (Howard Hinnant's `civil_from_days`), cheaper
    // than chrono's calendar accessors.
    let (days, rem) = (secs.div_euclid(86_400), secs.rem_euclid(86_400) as u32);
    let z = days + 719_468;
    let era = z.div_euclid(146_097);
    let doe = z.rem_euclid(146_097);
    let yoe = (doe - doe / 1460 + doe / 36_524 - doe / 146_096) / 365;
    let doy = doe - (365 * yoe + yoe / 4 - yoe / 100);
    let mp = (5 * doy + 2) / 153;
    let day = (doy - (153 * mp + 2) / 5 + 1) as u32;
    let month = if mp < 10 { mp + 3 } else { mp - 9 } as u32;
    let year = yoe + era * 400 + i64::from(month <= 2);
    if !(0..=9999).contains(&year) || nanos >= 1_000_000_000 {
        return None;
    }
    let mut out = *b"0000-00-00T00:00:00+00:00";
    let year = year as u32;
    out[0] += (year / 1000 % 10) as u8;
    out[1] += (year / 100 % 10) as u8;
    out[2] += (year / 10 % 10) as u8;
    out[3] += (year % 10) as u8;
    for (at, n) in [
        (5, month),
        (8, day),
        (11, rem / 3600),
        (14, rem / 60 % 60),
        (17, rem % 60),
    ] {
        out[at] += (n / 10) as u8;
        out[at + 1] += (n % 10) as u8;
    }
    Some(out)
}
