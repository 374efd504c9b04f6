//! Activities (seed 004): the input model, its validation, and the texts the index is made of.
//!
//! The embedder reads the activity's own words and the questions it answers
//! ([`Activity::dense_views`]); BM25 reads seed 004
//! Requirement 2's lines (`标题`, `描述`, `类型`, `标签`, `时间`, `地点`;
//! [`Activity::lexical_text`]), time said in the activity's timezone (`ACTIVITY_TIMEZONE`,
//! Asia/Shanghai by default) as 周一…周日 and a part of the day: 早上 05:00–11:59, 下午
//! 12:00–17:59, 晚上 18:00–22:59, 深夜 23:00–04:59. Seed 004's `氛围` line (a vibe inferred by
//! a rule table, [`crate::activities::vibes`]) is measured out of the index: it is said in
//! match reasons only.
//!
//! This module stores nothing and calls nothing; indexing and retrieval build on it.

use chrono::{DateTime, Datelike, Timelike, Utc, Weekday};
use chrono_tz::Tz;
use serde::{Deserialize, Serialize};
use sha2::{Digest, Sha256};

use crate::activities::vibes::{self, without_left_behind};
use crate::core::error::{Error, Result};

pub const MAX_TITLE_CHARS: usize = 100;
pub const MAX_DESCRIPTION_CHARS: usize = 2000;
pub const MAX_TAGS: usize = 20;

#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize, Deserialize)]
#[serde(rename_all = "lowercase")]
pub enum Status {
    Active,
    Draft,
    Cancelled,
    Completed,
}

#[derive(Debug, Clone, Copy, PartialEq, Serialize, Deserialize)]
pub struct Location {
    pub lat: f64,
    pub lng: f64,
}

/// An activity as callers send it (camelCase, seed 004).
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
#[serde(rename_all = "camelCase", deny_unknown_fields)]
pub struct Activity {
    pub id: String,
    pub title: String,
    #[serde(default)]
    pub description: String,
    #[serde(rename = "type")]
    pub kind: String,
    #[serde(default)]
    pub tags: Vec<String>,
    pub start_at: DateTime<Utc>,
    #[serde(default)]
    pub location_name: String,
    pub location: Location,
    pub status: Status,
    pub current_participants: u32,
    pub max_participants: u32,
    /// When the source of truth last changed it (RFC 3339): a write older than what the index
    /// holds is ignored. Absent, the write's own time stands in (the event's, or the request's).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub updated_at: Option<DateTime<Utc>>,
}

/// Refuses an activity id that is not 1-128 letters, digits, '-' or '_' (400 naming `id`).
pub fn check_id(id: &str) -> Result<()> {
    bounded("id", id, 1, 128)?;
    if !crate::core::validate::is_id(id, 128) {
        return Err(field_error("id", "must be letters, digits, '-' or '_'"));
    }
    Ok(())
}

fn field_error(field: &str, message: impl std::fmt::Display) -> Error {
    Error::invalid("invalid_activity", format!("{field}: {message}"))
}

fn bounded(field: &str, value: &str, min: usize, max: usize) -> Result<()> {
    let n = value.trim().chars().count();
    if n < min || value.chars().count() > max {
        return Err(field_error(field, format!("must be {min} to {max} characters")));
    }
    Ok(())
}

impl Activity {
    /// Parses and validates one activity (a typed body: an unknown field is `unknown_field`);
    /// the error names the field's path.
    pub fn from_json(value: serde_json::Value) -> Result<Self> {
        let activity: Self = crate::core::json::typed(&value, "invalid_activity")?;
        activity.validate()?;
        Ok(activity)
    }

    /// Checks coordinates, participant counts and text lengths.
    pub fn validate(&self) -> Result<()> {
        check_id(&self.id)?;
        bounded("title", &self.title, 1, MAX_TITLE_CHARS)?;
        bounded("description", &self.description, 0, MAX_DESCRIPTION_CHARS)?;
        bounded("type", &self.kind, 1, 50)?;
        bounded("locationName", &self.location_name, 0, 200)?;
        if self.tags.len() > MAX_TAGS {
            return Err(field_error("tags", format!("at most {MAX_TAGS} tags")));
        }
        for tag in &self.tags {
            bounded("tags", tag, 1, 30)?;
        }
        let Location { lat, lng } = self.location;
        if !(-90.0..=90.0).contains(&lat) || !lat.is_finite() {
            return Err(field_error("location.lat", format!("{lat} is not between -90 and 90")));
        }
        if !(-180.0..=180.0).contains(&lng) || !lng.is_finite() {
            return Err(field_error("location.lng", format!("{lng} is not between -180 and 180")));
        }
        if self.max_participants == 0 {
            return Err(field_error("maxParticipants", "must be at least 1"));
        }
        if self.current_participants > self.max_participants {
            return Err(field_error("currentParticipants", "must not exceed maxParticipants"));
        }
        Ok(())
    }

    /// Places still free.
    pub fn spots_left(&self) -> u32 {
        self.max_participants - self.current_participants
    }

    /// Hash of what the vectors are made of: the [`dense_views`], the [`lexical_text`] in `zone`
    /// (title, description, type, tags, time, place) and the [`TEXT_RULES`] version. An update
    /// that keeps it needs no new embedding; any other needs one.
    ///
    /// [`dense_views`]: Activity::dense_views
    /// [`lexical_text`]: Activity::lexical_text
    pub fn content_hash(&self, zone: Tz) -> String {
        text_hash(&self.dense_views(zone), &self.lexical_text(zone))
    }

    /// What the dense vector is made of: the activity's own words ([`Activity::dense_text`])
    /// and the questions it answers ([`Activity::questions`]). The bundled e5 embeds both as
    /// queries and sums them (on the pooled held-out quality sets, `cargo xtask quality`, the
    /// questions lifted intent queries over the own words alone); an API model the first only.
    pub fn dense_views(&self, zone: Tz) -> [String; 2] {
        [self.dense_text(), self.questions(zone)]
    }

    /// Short questions the activity answers, made from its fields alone (no model, no key):
    /// its type and tags, the part of the week and of the day, and how many people it takes.
    pub fn questions(&self, zone: Tz) -> String {
        let local = self.start_at.with_timezone(&zone);
        let week = if local.weekday().number_from_monday() >= 6 { "周末" } else { "工作日" };
        let crowd = match self.max_participants {
            0..=8 => "人少的小活动",
            9..=30 => "十几二十人的活动",
            31..=100 => "几十人的活动",
            _ => "人很多的大型活动",
        };
        let about = if self.tags.is_empty() {
            String::new()
        } else {
            format!("想找和{}有关的。", self.tags.join("、"))
        };
        format!("有什么{}活动？{about}{week}{}有什么可以去的？{crowd}", self.kind, time_of_day(local.hour()))
    }

    /// What the embedder reads: the activity's own words (title, description, type, tags),
    /// without what it helps people leave behind ([`without_left_behind`]). No time, place or
    /// inferred vibe: on the quality sets built apart from tuning (`cargo xtask quality`), those
    /// lines pulled intent queries toward activities that merely share them.
    pub fn dense_text(&self) -> String {
        without_left_behind(&format!("{}\n{}\n{}\n{}", self.title, self.description, self.kind, self.tags.join(", ")))
    }

    /// What BM25 reads: seed 004's lines (`标题`, `描述`, `类型`, `标签`, `时间`, `地点`) with
    /// time in `zone`, without what the activity helps people leave behind. The vibe line
    /// (`氛围`) is not indexed: a rule table's words matched decoys ("安静不了的…") and
    /// missed what it was not written for.
    pub fn lexical_text(&self, zone: Tz) -> String {
        let local = self.start_at.with_timezone(&zone);
        without_left_behind(&format!(
            "标题: {}\n描述: {}\n类型: {}\n标签: {}\n时间: {} {}\n地点: {}",
            self.title,
            self.description,
            self.kind,
            self.tags.join(", "),
            day_of_week(local.weekday()),
            time_of_day(local.hour()),
            self.location_name,
        ))
    }

    /// The vibes the activity implies ([`vibes::implied_vibe`]): said in match reasons.
    pub fn implied_vibe(&self) -> String {
        vibes::implied_vibe(
            &format!("{} {} {} {}", self.kind, self.tags.join(" "), self.title, self.description),
            self.max_participants,
        )
    }
}

/// 周一 … 周日.
pub fn day_of_week(day: Weekday) -> &'static str {
    match day {
        Weekday::Mon => "周一",
        Weekday::Tue => "周二",
        Weekday::Wed => "周三",
        Weekday::Thu => "周四",
        Weekday::Fri => "周五",
        Weekday::Sat => "周六",
        Weekday::Sun => "周日",
    }
}

/// 早上 05–11, 下午 12–17, 晚上 18–22, 深夜 23–04 (local hours).
pub fn time_of_day(hour: u32) -> &'static str {
    match hour {
        5..=11 => "早上",
        12..=17 => "下午",
        18..=22 => "晚上",
        _ => "深夜",
    }
}

/// The version of the rules that turn an activity into indexed text (which fields, which lines,
/// [`without_left_behind`]): bump it when they change, so stored vectors are made again on the
/// next write or backfill instead of mixing old and new text.
pub const TEXT_RULES: u32 = 4;

/// The content hash of an activity's dense views and lexical text (with the [`TEXT_RULES`]
/// version), for a caller that already has them.
pub fn text_hash(views: &[String], lexical: &str) -> String {
    let mut h = Sha256::new();
    h.update(TEXT_RULES.to_le_bytes());
    for text in views.iter().map(String::as_str).chain([lexical]) {
        h.update((text.len() as u64).to_le_bytes());
        h.update(text.as_bytes());
    }
    hex::encode(h.finalize())
}

#[cfg(test)]
mod tests {
    use super::*;
    use serde_json::json;

    #[test]
    fn what_an_activity_leaves_behind_is_not_what_it_offers() {
        assert_eq!(without_left_behind("适合想突破社恐的人。"), "适合想突破的人。");
        assert_eq!(without_left_behind("远离城市光污染，看土星环"), "远离，看土星环");
        assert_eq!(without_left_behind("告别拖延 克服恐高"), "告别 克服");
        assert_eq!(without_left_behind("社恐友好，不用说话"), "社恐友好，不用说话");
        assert_eq!(without_left_behind("摆脱一二三四五六七八九十十一十二十三"), "摆脱十二十三");
        let improv = activity("即兴戏剧工作坊", "演出", "通过即兴游戏打开自己，适合想突破社恐的人。", 13);
        for text in [improv.dense_text(), improv.lexical_text(chrono_tz::Asia::Shanghai)] {
            assert!(!text.contains("社恐") && text.contains("适合想突破的人"), "{text}");
        }
    }

    #[cfg(feature = "vector-index")]
    #[test]
    fn a_left_behind_word_gives_no_lexical_match() {
        let improv = activity("即兴戏剧工作坊", "演出", "通过即兴游戏打开自己，适合想突破社恐的人。", 13);
        let text = improv.lexical_text(chrono_tz::Asia::Shanghai);
        let bm25 = crate::activities::index::bm25::Bm25::new();
        let query = bm25.query("社恐");
        let quiet = bm25.document("描述: 社恐友好的安静读书局");
        assert!(!query.indices.is_empty() && query.indices.iter().all(|i| quiet.indices.contains(i)));
        assert!(query.indices.iter().all(|i| !bm25.document(&text).indices.contains(i)));
    }

    fn activity(title: &str, kind: &str, description: &str, max: u32) -> Activity {
        Activity {
            id: "a1".into(),
            title: title.into(),
            description: description.into(),
            kind: kind.into(),
            tags: vec![],
            start_at: "2026-11-27T12:30:00Z".parse().unwrap(), // Friday 20:30 in Shanghai
            location_name: "静安区愚园路".into(),
            location: Location { lat: 31.22, lng: 121.44 },
            status: Status::Active,
            current_participants: 2,
            max_participants: max,
            updated_at: None,
        }
    }

    #[test]
    fn the_embedder_reads_the_activitys_words_and_bm25_seed_004s_lines_in_its_timezone() {
        let mut a = activity("白噪音读书局", "读书会", "雨声白噪音里安静看书，放空发呆也可以。", 6);
        a.tags = vec!["读书".into(), "放松".into()];
        assert_eq!(a.dense_text(), "白噪音读书局\n雨声白噪音里安静看书，放空发呆也可以。\n读书会\n读书, 放松");
        assert_eq!(
            a.lexical_text(chrono_tz::Asia::Shanghai),
            "标题: 白噪音读书局\n描述: 雨声白噪音里安静看书，放空发呆也可以。\n类型: 读书会\n标签: 读书, 放松\n时间: 周五 晚上\n地点: 静安区愚园路"
        );
        // The same instant is Friday early afternoon in London.
        assert!(a.lexical_text(chrono_tz::Europe::London).contains("时间: 周五 下午"));
    }

    #[test]
    fn vibes_come_from_realistic_descriptions() {
        let cases = [
            (
                activity("周五大排档啤酒局", "美食", "下班来撸串喝啤酒，人多热闹，欢迎新朋友！", 20),
                "热闹、美食、微醺、交友",
            ),
            (activity("创业者早餐会", "沙龙", "聊聊融资和产品，认识同行业的创业伙伴。", 40), "商务、职场、交友、大型"),
            (
                activity("周末西湖徒步", "运动", "十公里环湖徒步，适合有一定体力的朋友。", 15),
                "运动、出汗燃脂、户外、亲近自然",
            ),
            (activity("亲子陶艺体验", "手作", "带孩子一起捏陶土，老师全程指导。", 8), "安静、手作创作、学习成长、亲子"),
            (activity("随便走走", "其他", "没有安排，见面再说。", 10), "轻松"),
        ];
        let got: Vec<(String, String)> = cases.iter().map(|(a, _)| (a.title.clone(), a.implied_vibe())).collect();
        let want: Vec<(String, String)> = cases.iter().map(|(a, e)| (a.title.clone(), e.to_string())).collect();
        assert_eq!(got, want);
    }

    #[test]
    fn parts_of_the_day_follow_the_documented_ranges() {
        let got: Vec<_> = [4, 5, 11, 12, 17, 18, 22, 23, 0].into_iter().map(time_of_day).collect();
        assert_eq!(got, ["深夜", "早上", "早上", "下午", "下午", "晚上", "晚上", "深夜", "深夜"]);
    }

    #[test]
    fn bad_activities_name_the_field() {
        let good = json!({
            "id": "a1", "title": "读书局", "description": "", "type": "读书会", "tags": ["读书"],
            "startAt": "2026-11-27T12:30:00Z", "locationName": "上海", "location": {"lat": 31.2, "lng": 121.4},
            "status": "active", "currentParticipants": 1, "maxParticipants": 6
        });
        let a = Activity::from_json(good.clone()).unwrap();
        assert_eq!(a.spots_left(), 5);
        for (patch, needle) in [
            (json!({"location": {"lat": 91.0, "lng": 0.0}}), "location.lat"),
            (json!({"location": {"lat": 0.0, "lng": -181.0}}), "location.lng"),
            (json!({"currentParticipants": 7}), "currentParticipants"),
            (json!({"currentParticipants": -1}), "currentParticipants: invalid value: integer `-1`"),
            (json!({"title": ""}), "title"),
            (json!({"title": "长".repeat(101)}), "title"),
            (json!({"status": "archived"}), "status: unknown variant `archived`"),
            (json!({"startAt": "next friday"}), "startAt: input contains invalid characters"),
            (json!({"colour": "red"}), "colour: unknown field `colour`"),
        ] {
            let mut body = good.clone();
            body.as_object_mut().unwrap().extend(patch.as_object().unwrap().clone());
            let e = Activity::from_json(body.clone()).unwrap_err();
            assert_eq!(e.status(), 400);
            assert!(e.to_string().starts_with(needle), "{body}: {e}");
        }
    }

    #[test]
    fn every_line_of_the_indexed_texts_and_nothing_else_changes_the_content_hash() {
        let zone = chrono_tz::Asia::Shanghai;
        let a = activity("读书局", "读书会", "安静看书", 6);
        let mut b = a.clone();
        b.current_participants = 5;
        b.updated_at = Some("2026-12-01T00:00:00Z".parse().unwrap());
        assert_eq!(a.content_hash(zone), b.content_hash(zone), "participants and updatedAt are not embedded");
        let changes: [fn(&mut Activity); 7] = [
            |b| b.title.push('!'),
            |b| b.description.push('!'),
            |b| b.kind = "桌游".into(),
            |b| b.tags.push("新".into()),
            |b| b.start_at = "2026-12-01T00:00:00Z".parse().unwrap(),
            |b| b.location_name = "徐汇区".into(),
            |b| b.max_participants = 200,
        ];
        for change in changes {
            let mut b = a.clone();
            change(&mut b);
            assert_ne!(a.content_hash(zone), b.content_hash(zone), "{}", b.lexical_text(zone));
        }
    }
}
