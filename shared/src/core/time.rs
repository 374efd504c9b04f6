//! Timestamps as seed 000 writes them (`accessed_at`): RFC 3339 with second precision and `Z`.
//! Also a serde helper: `#[serde(with = "crate::core::time")]`.

use chrono::{DateTime, SecondsFormat, Utc};
use serde::{Deserialize, Deserializer, Serializer};

/// Seconds from `now` to the next midnight UTC (at least 1): when a day's budget or quota renews.
pub fn seconds_to_midnight(now: DateTime<Utc>) -> u64 {
    use chrono::Timelike;
    (86_400 - u64::from(now.num_seconds_from_midnight())).max(1)
}

pub fn format(t: &DateTime<Utc>) -> String {
    t.to_rfc3339_opts(SecondsFormat::Secs, true)
}

pub fn serialize<S: Serializer>(t: &DateTime<Utc>, s: S) -> Result<S::Ok, S::Error> {
    s.serialize_str(&format(t))
}

pub fn deserialize<'de, D: Deserializer<'de>>(d: D) -> Result<DateTime<Utc>, D::Error> {
    let text = String::deserialize(d)?;
    DateTime::parse_from_rfc3339(&text).map(|t| t.with_timezone(&Utc)).map_err(serde::de::Error::custom)
}

#[cfg(test)]
mod tests {
    #[test]
    fn a_day_renews_at_midnight_utc() {
        assert_eq!(super::seconds_to_midnight("2026-11-24T23:59:00Z".parse().unwrap()), 60);
        assert_eq!(super::seconds_to_midnight("2026-11-24T00:00:00Z".parse().unwrap()), 86_400);
    }
}
