//! When a query asks for a time ("周五晚上", "周末下午", "工作日", "今晚"): the weekdays and
//! parts of the day it names, read from the words people use. Retrieval lifts the candidates
//! that start then (a soft preference, not a filter: `filters.timeRange` is the hard one).

use std::sync::LazyLock;

use chrono::{DateTime, Datelike, Timelike, Utc, Weekday};
use chrono_tz::Tz;

use crate::activities::activity::time_of_day;

/// What a query says about time; empty sets mean it says nothing of that.
#[derive(Debug, Clone, Default, PartialEq, Eq)]
pub struct Wanted {
    pub days: Vec<Weekday>,
    /// Parts of the day as [`time_of_day`] names them: 早上, 下午, 晚上, 深夜.
    pub parts: Vec<&'static str>,
}

const WEEK: [Weekday; 7] =
    [Weekday::Mon, Weekday::Tue, Weekday::Wed, Weekday::Thu, Weekday::Fri, Weekday::Sat, Weekday::Sun];
const DAY_NAMES: [&str; 7] = ["一", "二", "三", "四", "五", "六", "日"];
/// Parts of the day and the words that name them.
const PARTS: [(&str, &[&str]); 4] = [
    ("早上", &["早上", "上午", "早晨", "清晨", "一早"]),
    ("下午", &["下午", "午后", "中午"]),
    ("晚上", &["晚上", "今晚", "明晚", "夜晚", "傍晚", "下班后", "晚饭后"]),
    ("深夜", &["深夜", "凌晨", "半夜", "午夜"]),
];
/// Words naming days besides 周X / 星期X / 礼拜X.
const DAY_WORDS: [&str; 9] = ["周天", "周末", "双休", "工作日", "下班", "今天", "今晚", "明天", "明晚"];

/// `query` without the words that name a time (what [`Wanted::parse`] reads): what is left is
/// what the query wants besides the time ("周六晚上热闹点的" → "热闹点的"), or the query itself
/// when nothing is.
pub fn without_time(query: &str) -> String {
    static WORDS: LazyLock<Vec<String>> = LazyLock::new(|| {
        let mut words: Vec<String> = DAY_WORDS.iter().map(|w| w.to_string()).collect();
        for name in DAY_NAMES {
            words.extend([format!("周{name}"), format!("星期{name}"), format!("礼拜{name}")]);
        }
        words.extend(PARTS.iter().flat_map(|(_, w)| w.iter().map(|w| w.to_string())));
        // Longest first, so "下班后" goes before "下班".
        words.sort_by_key(|w| std::cmp::Reverse(w.chars().count()));
        words
    });
    let mut rest = query.to_owned();
    for w in WORDS.iter().filter(|w| query.contains(w.as_str())) {
        rest = rest.replace(w.as_str(), " ");
    }
    let rest = rest.split_whitespace().collect::<Vec<_>>().join(" ");
    if rest.is_empty() { query.trim().to_owned() } else { rest }
}

impl Wanted {
    /// The time `query` asks for, with "today" and "tomorrow" taken at `now` in `zone`.
    pub fn parse(query: &str, now: DateTime<Utc>, zone: Tz) -> Self {
        let mut w = Wanted::default();
        let today = now.with_timezone(&zone).weekday();
        for (i, name) in DAY_NAMES.iter().enumerate() {
            let names = [format!("周{name}"), format!("星期{name}"), format!("礼拜{name}")];
            if names.iter().any(|n| query.contains(n.as_str())) || (i == 6 && query.contains("周天")) {
                w.days.push(WEEK[i]);
            }
        }
        if query.contains("周末") || query.contains("双休") {
            w.days.extend([Weekday::Sat, Weekday::Sun]);
        }
        if query.contains("工作日") || query.contains("下班") {
            w.days.extend(&WEEK[..5]);
        }
        if query.contains("今天") || query.contains("今晚") {
            w.days.push(today);
        }
        if query.contains("明天") || query.contains("明晚") {
            w.days.push(today.succ());
        }
        for (part, words) in PARTS {
            if words.iter().any(|word| query.contains(word)) {
                w.parts.push(part);
            }
        }
        w.days.sort_by_key(Weekday::num_days_from_monday);
        w.days.dedup();
        w
    }

    pub fn is_empty(&self) -> bool {
        self.days.is_empty() && self.parts.is_empty()
    }

    /// The share of what was asked that `start` meets: 1 when its weekday and part of the day
    /// are both as asked (or not asked), 0.5 when one of two is, 0 when none is.
    pub fn fit(&self, start: DateTime<Utc>, zone: Tz) -> f32 {
        let local = start.with_timezone(&zone);
        let mut asked = 0.0;
        let mut met = 0.0;
        if !self.days.is_empty() {
            asked += 1.0;
            met += f32::from(u8::from(self.days.contains(&local.weekday())));
        }
        if !self.parts.is_empty() {
            asked += 1.0;
            met += f32::from(u8::from(self.parts.contains(&time_of_day(local.hour()))));
        }
        if asked == 0.0 { 0.0 } else { met / asked }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn now() -> DateTime<Utc> {
        "2026-11-22T04:00:00Z".parse().unwrap() // Sunday noon in Shanghai
    }

    #[test]
    fn reads_days_and_parts_of_the_day() {
        let z = chrono_tz::Asia::Shanghai;
        let w = Wanted::parse("周五晚上热闹的地方", now(), z);
        assert_eq!((w.days.as_slice(), w.parts.as_slice()), (&[Weekday::Fri][..], &["晚上"][..]));
        let w = Wanted::parse("周末下午安静一点", now(), z);
        assert_eq!((w.days.as_slice(), w.parts.as_slice()), (&[Weekday::Sat, Weekday::Sun][..], &["下午"][..]));
        let w = Wanted::parse("今晚喝一杯", now(), z);
        assert_eq!((w.days.as_slice(), w.parts.as_slice()), (&[Weekday::Sun][..], &["晚上"][..]));
        assert_eq!(Wanted::parse("明天早上", now(), z).days, [Weekday::Mon]);
        assert!(Wanted::parse("压力大想发呆", now(), z).is_empty());
    }

    #[test]
    fn what_is_left_without_the_time_is_what_the_query_wants_besides() {
        assert_eq!(without_time("周六晚上热闹点的"), "热闹点的");
        assert_eq!(without_time("工作日下班后放松一下"), "放松一下");
        assert_eq!(without_time("周末早上 运动一下"), "运动一下");
        assert_eq!(without_time("压力大想发呆"), "压力大想发呆");
        assert_eq!(without_time("周五晚上"), "周五晚上");
    }

    #[test]
    fn fit_is_the_share_of_what_was_asked() {
        let z = chrono_tz::Asia::Shanghai;
        let w = Wanted::parse("周五晚上", now(), z);
        let friday_evening: DateTime<Utc> = "2026-11-27T12:30:00Z".parse().unwrap(); // 20:30 local
        let friday_morning: DateTime<Utc> = "2026-11-27T01:00:00Z".parse().unwrap(); // 09:00 local
        let saturday_morning: DateTime<Utc> = "2026-11-28T01:00:00Z".parse().unwrap();
        assert_eq!(w.fit(friday_evening, z), 1.0);
        assert_eq!(w.fit(friday_morning, z), 0.5);
        assert_eq!(w.fit(saturday_morning, z), 0.0);
        assert_eq!(Wanted::default().fit(friday_evening, z), 0.0);
    }
}
