//! Where a user is (issue 63): the place the assistant looks for activities when a message comes
//! without a `location`. Two records under the user (`USER#<id>`), each the user's to see and
//! delete (`GET`, `PUT`, `DELETE /users/{userId}/location`):
//!
//! - `LOCATION#last`: the `location` of their latest chat message that carried one, kept
//!   [`LAST_KEPT_DAYS`] days after it was sent, then gone (the table's TTL);
//! - `LOCATION#saved`: a place they saved (`{lat, lng, label?}`, e.g. their city), kept until
//!   they delete it.
//!
//! The last place wins over the saved one; a last place is kept to 3 decimals (about 100 m).
//! `DELETE` forgets both at once: each is overwritten with nothing in it and expired, since no
//! function may `DeleteItem`, so no read returns them. What stays elsewhere: DynamoDB's TTL
//! removes expired items within days, and the table's point-in-time recovery keeps earlier
//! versions 35 days (docs/operations.md, the records table).
//!
//! A place the user gives is theirs, and never logged.

use std::sync::Arc;

use chrono::{DateTime, Utc};
use serde::{Deserialize, Serialize};
use serde_json::{Value, json};

use crate::activities::user_pk as pk;
use crate::core::clock::Clock;
use crate::core::error::{Error, Result};
use crate::core::records::{Record, RecordStore};

/// Days a location sent with a chat message is kept.
pub const LAST_KEPT_DAYS: i64 = 30;
const LAST: &str = "LOCATION#last";
const SAVED: &str = "LOCATION#saved";
/// Longest label kept, in characters.
const LABEL_CHARS: usize = 60;

/// A place: coordinates and, for a saved one, what the user calls it.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct Place {
    pub lat: f64,
    pub lng: f64,
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub label: Option<String>,
}

/// Which of the user's places a search used.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize)]
#[serde(rename_all = "lowercase")]
pub enum Kind {
    /// Sent with an earlier chat message.
    Last,
    /// Saved by the user.
    Saved,
}

/// A user's kept places.
#[derive(Clone)]
pub struct Whereabouts {
    records: Arc<dyn RecordStore>,
    clock: Arc<dyn Clock>,
}

/// A character that does not print as itself: controls, line and paragraph separators,
/// zero-width and bidirectional marks (what could hide text from the user who reads a label).
fn unprintable(c: char) -> bool {
    c.is_control()
        || matches!(c, '\u{200B}'..='\u{200F}' | '\u{2028}'..='\u{202E}' | '\u{2060}'..='\u{2069}' | '\u{FEFF}')
}

impl Whereabouts {
    pub fn new(records: Arc<dyn RecordStore>, clock: Arc<dyn Clock>) -> Self {
        Self { records, clock }
    }

    /// Where to search for `user` when a message gives no place: the last one sent (within
    /// [`LAST_KEPT_DAYS`]), else the saved one, else `None`.
    pub async fn known(&self, user: &str) -> Result<Option<(Place, Kind, DateTime<Utc>)>> {
        for (sk, kind) in [(LAST, Kind::Last), (SAVED, Kind::Saved)] {
            if let Some((place, at)) = self.read(user, sk).await? {
                return Ok(Some((place, kind, at)));
            }
        }
        Ok(None)
    }

    /// Keeps `(lat, lng)`, sent with `user`'s chat message, as their last place (to 3 decimals).
    pub async fn keep_last(&self, user: &str, lat: f64, lng: f64) -> Result<()> {
        let expires = self.clock.now().timestamp() + LAST_KEPT_DAYS * 86_400;
        let round = |x: f64| (x * 1000.0).round() / 1000.0;
        self.write(user, LAST, &Place { lat: round(lat), lng: round(lng), label: None }, Some(expires)).await
    }

    /// `PUT /users/{userId}/location`: saves `{lat, lng, label?}` (checked: a 400 names the
    /// field) and answers what is kept.
    pub async fn save(&self, user: &str, body: &Value) -> Result<Value> {
        crate::core::validate::user_id(user)?;
        let place: Place = crate::core::json::typed(body, "invalid_location")?;
        if !(-90.0..=90.0).contains(&place.lat) {
            return Err(Error::invalid("invalid_location", "lat: -90..90"));
        }
        if !(-180.0..=180.0).contains(&place.lng) {
            return Err(Error::invalid("invalid_location", "lng: -180..180"));
        }
        let label = place.label.as_deref().map(str::trim);
        if label.is_some_and(|l| l.is_empty() || l.chars().count() > LABEL_CHARS || l.chars().any(unprintable)) {
            return Err(Error::invalid(
                "invalid_location",
                format!("label: 1 to {LABEL_CHARS} printable characters (no controls, line or bidi marks)"),
            ));
        }
        let place = Place { label: label.map(str::to_owned), ..place };
        self.write(user, SAVED, &place, None).await?;
        self.view(user).await
    }

    /// `GET /users/{userId}/location`: `{userId, last, saved, lastKeptDays}`, each place
    /// `{lat, lng, label?, at, expiresAt?}` or null.
    pub async fn view(&self, user: &str) -> Result<Value> {
        crate::core::validate::user_id(user)?;
        let now = self.clock.now().timestamp();
        let mut out = json!({"userId": user, "lastKeptDays": LAST_KEPT_DAYS});
        for (sk, key) in [(LAST, "last"), (SAVED, "saved")] {
            let record = self.records.get(&pk(user), sk, now).await?;
            out[key] = match record.filter(|r| r.body["place"].is_object()) {
                Some(r) => {
                    let mut shown = r.body["place"].clone();
                    shown["at"] = r.body["at"].clone();
                    if let Some(t) = r.expires_at.and_then(|t| DateTime::from_timestamp(t, 0)) {
                        shown["expiresAt"] = json!(t.to_rfc3339());
                    }
                    shown
                }
                None => Value::Null,
            };
        }
        Ok(out)
    }

    /// `DELETE /users/{userId}/location`: forgets both places.
    pub async fn forget(&self, user: &str) -> Result<()> {
        crate::core::validate::user_id(user)?;
        let now = self.clock.now().timestamp();
        for sk in [LAST, SAVED] {
            self.records.put(&Record { pk: pk(user), sk: sk.into(), expires_at: Some(now), body: json!({}) }).await?;
        }
        Ok(())
    }

    async fn read(&self, user: &str, sk: &str) -> Result<Option<(Place, DateTime<Utc>)>> {
        let record = self.records.get(&pk(user), sk, self.clock.now().timestamp()).await?;
        Ok(record.and_then(|r| {
            let place = serde_json::from_value(r.body["place"].clone()).ok()?;
            let at = r.body["at"].as_str()?.parse().ok()?;
            Some((place, at))
        }))
    }

    async fn write(&self, user: &str, sk: &str, place: &Place, expires_at: Option<i64>) -> Result<()> {
        let body = json!({"place": place, "at": self.clock.now().to_rfc3339()});
        self.records.put(&Record { pk: pk(user), sk: sk.into(), expires_at, body }).await
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::core::clock::ManualClock;
    use crate::core::records::LocalRecords;

    fn whereabouts() -> (Whereabouts, Arc<ManualClock>) {
        let dir = std::env::temp_dir().join(format!("whereabouts-{}", uuid::Uuid::new_v4()));
        let clock = Arc::new(ManualClock::new("2026-11-29T08:00:00Z".parse().unwrap()));
        let records: Arc<dyn RecordStore> = Arc::new(LocalRecords::open(&dir).unwrap());
        (Whereabouts::new(records, clock.clone()), clock)
    }

    #[tokio::test]
    async fn the_last_place_wins_over_the_saved_one_until_it_expires_and_delete_forgets_both() {
        let (w, clock) = whereabouts();
        assert_eq!(w.known("u1").await.unwrap(), None);
        w.save("u1", &json!({"lat": 31.23, "lng": 121.47, "label": " 上海 "})).await.unwrap();
        let (place, kind, _) = w.known("u1").await.unwrap().unwrap();
        assert_eq!((place.label.as_deref(), kind), (Some("上海"), Kind::Saved));
        w.keep_last("u1", 31.16049, 121.35051).await.unwrap();
        assert_eq!(w.known("u1").await.unwrap().unwrap().1, Kind::Last);
        let shown = w.view("u1").await.unwrap();
        assert_eq!((&shown["last"]["lat"], &shown["last"]["lng"]), (&json!(31.16), &json!(121.351)), "to 3 decimals");
        assert_eq!(shown["last"]["expiresAt"], json!("2026-12-29T08:00:00+00:00"));
        assert_eq!(shown["saved"]["label"], json!("上海"));
        assert!(shown["saved"].get("expiresAt").is_none(), "a saved place is kept until deleted");
        clock.advance(chrono::Duration::days(LAST_KEPT_DAYS) + chrono::Duration::seconds(1));
        assert_eq!(w.known("u1").await.unwrap().unwrap().1, Kind::Saved, "the last place is gone after its days");
        w.keep_last("u1", 31.16, 121.35).await.unwrap();
        w.forget("u1").await.unwrap();
        assert_eq!(w.known("u1").await.unwrap(), None);
        assert_eq!(w.view("u1").await.unwrap()["saved"], Value::Null);
    }

    #[tokio::test]
    async fn a_bad_place_is_a_400_naming_the_field_and_keeps_nothing() {
        let (w, _) = whereabouts();
        for (body, names) in [
            (json!({"lat": 91, "lng": 0}), "lat"),
            (json!({"lat": "x", "lng": 0}), "lat"),
            (json!({"lng": 0}), "lat"),
            (json!({"lat": 1, "lng": 200}), "lng"),
            (json!({"lat": 1, "lng": 2, "label": ""}), "label"),
            (json!({"lat": 1, "lng": 2, "label": "上海\u{202E}"}), "label"),
            (json!({"lat": 1, "lng": 2, "city": "x"}), "city"),
        ] {
            let e = w.save("u1", &body).await.unwrap_err();
            assert_eq!(e.status(), 400, "{body}");
            assert!(e.to_string().contains(names), "{body}: {e}");
        }
        assert_eq!(w.known("u1").await.unwrap(), None);
    }
}
