//! Which writing system a text uses: the one place that knows the Unicode ranges of Han,
//! kana and hangul. Used to tune searches for Chinese, to pick a language, and to split
//! CJK text (which has no spaces) into tokens.

/// Han ideographs (unified, extensions A-F, compatibility).
pub fn is_han(c: char) -> bool {
    matches!(c as u32, 0x3400..=0x4DBF | 0x4E00..=0x9FFF | 0xF900..=0xFAFF | 0x20000..=0x2FA1F)
}

/// Hiragana and katakana.
pub fn is_kana(c: char) -> bool {
    matches!(c as u32, 0x3040..=0x30FF)
}

/// Hangul syllables.
pub fn is_hangul(c: char) -> bool {
    matches!(c as u32, 0xAC00..=0xD7AF)
}

/// Han, kana or hangul: characters written without spaces between words.
pub fn is_cjk(c: char) -> bool {
    is_han(c) || is_kana(c) || is_hangul(c)
}

/// The language of `text` for the bundle's purposes: `ja` (any kana), `ko` (any hangul),
/// `zh` (Han without kana or hangul), else `en`.
pub fn language(text: &str) -> &'static str {
    if text.chars().any(is_kana) {
        "ja"
    } else if text.chars().any(is_hangul) {
        "ko"
    } else if text.chars().any(is_han) {
        "zh"
    } else {
        "en"
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn tells_chinese_from_japanese_and_korean() {
        assert_eq!(language("台灣 咖啡 市場"), "zh");
        assert_eq!(language("人工智能发展史"), "zh");
        assert_eq!(language("東京 カフェ"), "ja", "kanji with kana is Japanese");
        assert_eq!(language("서울 카페"), "ko");
        assert_eq!(language("coffee market"), "en");
        assert!(is_cjk('咖') && is_cjk('カ') && is_cjk('카') && !is_cjk('、'));
    }
}
