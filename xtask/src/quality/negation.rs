//! What a query says it does not want ("不要太吵", "不用花钱", "不喝酒也能…", "不会游泳"):
//! the phrases after a negated wish (不 + 要/想/用/会/能/太/爱/喝/吃/去/需/必, or 别 + 太/让/要),
//! each up to the end of its clause. A method the lab measured (searching without them and
//! pushing down the candidates closest to each): it helped the dev splits and hurt the sealed
//! test split, so retrieval does not use it (issue 19).
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
        let wanted = wanted.trim_matches(|c: char| CLAUSE_ENDS.contains(&c) || c.is_whitespace()).to_owned();
        // A query that only rules things out still searches for itself.
        let wanted = if wanted.is_empty() { query.trim().to_owned() } else { wanted };
        Negation { wanted, unwanted }
    }
}

#[cfg(test)]
mod tests {
    use super::Negation;

    fn parse(q: &str) -> (String, Vec<String>) {
        let n = Negation::parse(q);
        (n.wanted, n.unwanted)
    }

    #[test]
    fn negated_wishes_are_read_out_of_the_query() {
        let s = |v: &[&str]| v.iter().map(|x| x.to_string()).collect::<Vec<_>>();
        assert_eq!(parse("不要太吵，想找个地方安安静静待着"), ("想找个地方安安静静待着".into(), s(&["吵"])));
        assert_eq!(parse("不喝酒也能玩得尽兴的晚上"), ("能玩得尽兴的晚上".into(), s(&["喝酒"])));
        assert_eq!(parse("想玩水但是不会游泳"), ("想玩水但是".into(), s(&["游泳"])));
        assert_eq!(parse("社恐，不想跟陌生人聊天"), ("社恐".into(), s(&["跟陌生人聊天"])));
        assert_eq!(parse("不用花钱的周末去处"), ("周末去处".into(), s(&["花钱"])));
        assert_eq!(parse("别太累，周末放松"), ("周末放松".into(), s(&["累"])));
    }

    #[test]
    fn states_and_other_words_are_not_negated_wishes() {
        for q in ["心情不好想被治愈一下", "不错的周末", "和别人一起玩", "特别安静的地方", "玩水"]
        {
            assert_eq!(parse(q), (q.to_owned(), vec![]), "{q}");
        }
        // Only a negation: it is still what is searched for.
        assert_eq!(parse("不要太吵"), ("不要太吵".into(), vec!["吵".to_owned()]));
    }
}
