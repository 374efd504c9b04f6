//! What a query says it does not want ("不要太吵", "不用花钱", "不喝酒也能…", "不会游泳"):
//! the phrases after a negated wish (不 + 要/想/用/会/能/太/爱/喝/吃/去/需/必, or 别 + 太/让/要),
//! each up to the end of its clause. Measured twice in the lab, never shipped: searching without
//! the phrases and pushing down what is near them helped the dev splits and hurt the sealed test
//! split (issue 19); the wish avoiding whatever facet a phrase wants (`lab --wishes`) lifted the
//! tune splits and not the held-out ones, and a review found phrases read wrongly ("周末要不要去
//! 喝一杯" → "去喝一杯") (issue 63).
//!
//! English and Japanese alike: the words after "no", "not", "without", "avoid", "don't",
//! "nothing" up to the end of the clause ("something fun but no drinking" → "drinking"), and the
//! phrase before なし, 抜き, じゃなくて, ではなく, 苦手, 嫌, 以外, たくない in text with kana
//! ("お酒なしで楽しめる" → "お酒").
//!
//! Grammar, not vocabulary: nothing here names an activity or a vibe. A state such as
//! "心情不好" is not a wish and is left alone.

/// A query read for what it rules out.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Negation {
    /// The query without its negated clauses: what to search for.
    pub wanted: String,
    /// What it rules out, e.g. `吵`, `花钱`, `喝酒`, `游泳`.
    pub unwanted: Vec<String>,
}

/// Words after 不 that make a wish ("不要", "不想", "不喝"...); "不好", "不错", "不过" are not.
const AFTER_BU: &[char] = &['要', '想', '用', '会', '能', '太', '爱', '喝', '吃', '去', '需', '必'];
/// Words after 别 that make one ("别太", "别让", "别要"); "别人", "特别" are not.
const AFTER_BIE: &[char] = &['太', '让', '要'];
/// Where a negated phrase ends: punctuation, or a word that turns to what is wanted.
const CLAUSE_ENDS: &[char] =
    &['，', ',', '。', '.', '！', '!', '？', '?', '；', ';', '、', ' ', '但', '也', '还', '就', '只', '的', '又'];
/// Modal words left off the front of the phrase ("要太吵" → "吵", "会游泳" → "游泳").
const MODALS: &[char] = &['要', '想', '用', '太', '需', '必', '会', '能', '爱'];

impl Negation {
    pub fn parse(query: &str) -> Self {
        let chars: Vec<char> = query.chars().collect();
        let (mut wanted, mut unwanted) = (String::new(), Vec::new());
        let mut i = 0;
        while i < chars.len() {
            let next = chars.get(i + 1);
            let negates = (chars[i] == '不' && next.is_some_and(|c| AFTER_BU.contains(c)))
                || (chars[i] == '别' && next.is_some_and(|c| AFTER_BIE.contains(c)));
            if !negates {
                wanted.push(chars[i]);
                i += 1;
                continue;
            }
            let end = (i + 1..chars.len()).find(|&j| CLAUSE_ENDS.contains(&chars[j])).unwrap_or(chars.len());
            let clause: String = chars[i + 1..end].iter().collect();
            let phrase = clause.trim_start_matches(MODALS);
            let phrase = if phrase.is_empty() { clause.as_str() } else { phrase };
            if !phrase.is_empty() {
                unwanted.push(phrase.to_owned());
            }
            i = end;
        }
        let wanted = japanese(&english(&wanted, &mut unwanted), &mut unwanted);
        let wanted = wanted.trim_matches(|c: char| CLAUSE_ENDS.contains(&c) || c.is_whitespace()).to_owned();
        // A query that only rules things out still searches for itself.
        let wanted = if wanted.is_empty() { query.trim().to_owned() } else { wanted };
        Negation { wanted, unwanted }
    }
}

/// English words that rule out what follows them.
const NEGATORS: &[&str] = &["no", "not", "without", "avoid", "don't", "dont", "doesn't", "nothing", "never", "hate"];
/// What a negator followed by these does not rule out ("not sure", "no idea", "not only").
const NOT_NEGATED: &[&str] = &["sure", "idea", "matter", "only", "bad", "problem", "worries", "way", "more", "later"];
/// Words that turn a clause back to what is wanted.
const TURNS: &[&str] = &["but", "and", "so", "just", "only", "though", "please", "instead", "rather"];
/// Words left off the front of a ruled-out phrase ("don't want to talk" → "talk").
const FILLERS: &[&str] =
    &["want", "wanna", "like", "need", "to", "too", "a", "an", "any", "much", "the", "be", "into", "really", "very"];

/// `text` without the English clauses that rule something out; each ruled-out phrase is pushed
/// to `unwanted`.
fn english(text: &str, unwanted: &mut Vec<String>) -> String {
    let words: Vec<&str> = text.split_whitespace().collect();
    let bare = |w: &str| w.trim_matches(|c: char| c.is_ascii_punctuation() && c != '\'').to_ascii_lowercase();
    let ends_clause = |w: &str| w.ends_with([',', '.', ';', '!', '?', '，', '。']);
    let (mut kept, mut k) = (Vec::new(), 0);
    while k < words.len() {
        let negates = NEGATORS.contains(&bare(words[k]).as_str())
            && !ends_clause(words[k])
            && words.get(k + 1).is_some_and(|n| !NOT_NEGATED.contains(&bare(n).as_str()));
        if !negates {
            kept.push(words[k]);
            k += 1;
            continue;
        }
        let mut phrase = Vec::new();
        k += 1;
        while k < words.len() && !TURNS.contains(&bare(words[k]).as_str()) {
            let word = bare(words[k]);
            if !word.is_empty() && !(phrase.is_empty() && FILLERS.contains(&word.as_str())) {
                phrase.push(word);
            }
            k += 1;
            if ends_clause(words[k - 1]) {
                break;
            }
        }
        if !phrase.is_empty() {
            unwanted.push(phrase.join(" "));
        }
    }
    kept.join(" ")
}

/// Japanese markers after what they rule out.
const MARKERS: &[&str] =
    &["なし", "無し", "抜き", "じゃなくて", "ではなく", "じゃない", "苦手", "嫌", "以外", "たくない"];
/// Where a ruled-out Japanese phrase begins: after punctuation or a space.
const PHRASE_STARTS: &[char] = &['、', '。', '！', '？', '!', '?', ',', '，', ' ', '　'];
/// Particles and softeners left off the end of the phrase ("騒がしいのはちょっと" → "騒がしい").
const TAILS: &[&str] = &["ちょっと", "あまり", "は", "が", "を", "の", "も", "で"];

/// `text` without the Japanese phrases that are ruled out (and their markers); each phrase is
/// pushed to `unwanted`. Only text with kana is Japanese: in Chinese, 嫌 and 以外 come before
/// what they rule out, or rule nothing out ("我嫌吵", "除此以外").
fn japanese(text: &str, unwanted: &mut Vec<String>) -> String {
    if !text.chars().any(|c| ('\u{3041}'..='\u{30ff}').contains(&c)) {
        return text.to_owned();
    }
    let mut out = String::new();
    let mut rest = text;
    while let Some((at, marker)) = MARKERS.iter().filter_map(|m| rest.find(m).map(|i| (i, *m))).min() {
        let before = &rest[..at];
        let start = before.rfind(PHRASE_STARTS).map_or(0, |i| i + before[i..].chars().next().map_or(1, char::len_utf8));
        let mut phrase = &before[start..];
        while let Some(t) = TAILS.iter().find(|t| phrase.ends_with(**t) && phrase.len() > t.len()) {
            phrase = &phrase[..phrase.len() - t.len()];
        }
        if !phrase.trim().is_empty() {
            unwanted.push(phrase.trim().to_owned());
        }
        out.push_str(&before[..start]);
        rest = &rest[at + marker.len()..];
    }
    out.push_str(rest);
    out
}

#[cfg(test)]
mod tests {
    use super::Negation;

    fn parse(q: &str) -> (String, Vec<String>) {
        let n = Negation::parse(q);
        (n.wanted, n.unwanted)
    }

    fn s(phrases: &[&str]) -> Vec<String> {
        phrases.iter().map(|x| x.to_string()).collect()
    }

    #[test]
    fn negated_wishes_are_read_out_of_the_query() {
        assert_eq!(parse("不要太吵，想找个地方安安静静待着"), ("想找个地方安安静静待着".into(), s(&["吵"])));
        assert_eq!(parse("不喝酒也能玩得尽兴的晚上"), ("能玩得尽兴的晚上".into(), s(&["喝酒"])));
        assert_eq!(parse("想玩水但是不会游泳"), ("想玩水但是".into(), s(&["游泳"])));
        assert_eq!(parse("社恐，不想跟陌生人聊天"), ("社恐".into(), s(&["跟陌生人聊天"])));
        assert_eq!(parse("不用花钱的周末去处"), ("周末去处".into(), s(&["花钱"])));
        assert_eq!(parse("别太累，周末放松"), ("周末放松".into(), s(&["累"])));
    }

    #[test]
    fn english_and_japanese_negations_are_read_too() {
        assert_eq!(
            parse("something fun tonight but no drinking"),
            ("something fun tonight but".into(), s(&["drinking"]))
        );
        assert_eq!(
            parse("I don't want to talk to strangers, just read"),
            ("I just read".into(), s(&["talk to strangers"]))
        );
        assert_eq!(parse("not too loud please"), ("please".into(), s(&["loud"])));
        assert_eq!(parse("a date without the crowds."), ("a date".into(), s(&["crowds"])));
        assert_eq!(parse("fun, no - thanks"), ("fun".into(), s(&["thanks"])));
        assert_eq!(parse("お酒なしで楽しめる飲み会"), ("で楽しめる飲み会".into(), s(&["お酒"])));
        assert_eq!(parse("騒がしいのはちょっと苦手、静かに過ごしたい"), ("静かに過ごしたい".into(), s(&["騒がしい"])));
        assert_eq!(parse("運動じゃなくて、ゆっくりしたい"), ("ゆっくりしたい".into(), s(&["運動"])));
    }

    #[test]
    fn any_text_is_read_without_a_panic() {
        // Every marker, negator, particle and stop beside plain letters, in random orders.
        let alphabet: Vec<char> =
            "不要别太想的，。、 ！?,.nootwhadvi'tsuなしじゃくてでは苦手嫌以外たいお酒がちょっと抜き無あ騒"
                .chars()
                .collect();
        let mut state = 0x2545_f491_4f6c_dd1d_u64;
        for _ in 0..20_000 {
            let mut text = String::new();
            for _ in 0..(state % 24) {
                state ^= state << 13;
                state ^= state >> 7;
                state ^= state << 17;
                text.push(alphabet[(state % alphabet.len() as u64) as usize]);
            }
            state = state.wrapping_add(0x9e37_79b9_7f4a_7c15);
            let n = Negation::parse(&text);
            assert!(n.unwanted.iter().all(|p| !p.is_empty()), "{text:?}: {n:?}");
        }
    }

    #[test]
    fn states_and_other_words_are_not_negated_wishes() {
        for q in [
            "心情不好想被治愈一下",
            "不错的周末",
            "和别人一起玩",
            "特别安静的地方",
            "玩水",
            "not sure what to do this weekend",
            "no idea, surprise me",
            "no worries, anything works",
            "静かな場所で本を読みたい",
            "我嫌吵，想找个安静的地方",
            "除此以外还有什么推荐",
        ] {
            assert_eq!(parse(q), (q.to_owned(), vec![]), "{q}");
        }
        // Only a negation: it is still what is searched for.
        assert_eq!(parse("不要太吵"), ("不要太吵".into(), vec!["吵".to_owned()]));
    }
}
