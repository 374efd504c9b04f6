//! Citations: turn what an upstream says about its sources into a clean, trustworthy list.
//!
//! Four inputs are merged, in this order: the API's `citations` URLs (the n-th backs inline
//! marker `[n]`), its `search_results` (which carry titles; a result backs the marker of its
//! `id`, or without one of its position), the URLs annotated on spans of the text (they back
//! no marker), and reference definitions written in the content (`[n]: https://...`, matched
//! by seed 000's pattern `\[(\d+)\]:\s*(https?://[^\s]+)`). Every URL is validated (http or https,
//! a public host name, no credentials) and normalised (trailing punctuation, fragment and
//! `utm_*` tracking parameters removed), then de-duplicated keeping the first position and the
//! first title any input gives.
//!
//! This module never fetches a URL; it only reads text.

use std::net::{Ipv4Addr, Ipv6Addr};
use std::sync::LazyLock;

use chrono::{DateTime, Utc};
use regex::Regex;
use serde::{Deserialize, Serialize};
use url::{Host, Url};

/// One stored citation, the `external_sources` shape of seed 000.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct Source {
    pub url: String,
    pub title: Option<String>,
    #[serde(with = "crate::core::time")]
    pub accessed_at: DateTime<Utc>,
    /// What the search result says, up to [`SNIPPET_CHARS`] characters, when the upstream gave
    /// it (Perplexity's `snippet`, Tavily's `content`).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub snippet: Option<String>,
}

/// The most of a result's text a source keeps (seed 003's `content[:300]`).
pub const SNIPPET_CHARS: usize = 300;

/// A source's snippet from a result's `text`: trimmed, at most [`SNIPPET_CHARS`], none if empty.
pub fn snippet(text: &str) -> Option<String> {
    let text = text.trim();
    (!text.is_empty()).then(|| text.chars().take(SNIPPET_CHARS).collect())
}

/// A search result as an upstream lists it (`search_results` of Perplexity, `results` of Tavily).
#[derive(Debug, Clone, Default, PartialEq, Serialize, Deserialize)]
pub struct SearchHit {
    pub url: String,
    pub title: Option<String>,
    pub date: Option<String>,
    /// The number inline `[n]` markers use for this result (Perplexity's result `id`).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub id: Option<u32>,
    /// The result's text (Perplexity's `snippet`, Tavily's `content`).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub snippet: Option<String>,
}

/// A URL that was offered as a citation and refused, with the reason.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct Rejected {
    pub url: String,
    pub reason: String,
}

/// What [`extract`] found.
#[derive(Debug, Clone, Default, PartialEq)]
pub struct Citations {
    /// Valid, normalised, de-duplicated sources, in citation order.
    pub sources: Vec<Source>,
    /// Inline `[n]` markers in the content that no valid source backs, ascending, once each.
    pub unbacked_markers: Vec<u32>,
    /// URLs refused by validation.
    pub rejected: Vec<Rejected>,
}

static REFERENCE_DEFINITION: LazyLock<Regex> =
    LazyLock::new(|| Regex::new(r"\[(\d+)\]:\s*(https?://[^\s]+)").expect("valid regex"));
static INLINE_MARKER: LazyLock<Regex> = LazyLock::new(|| Regex::new(r"\[(\d{1,4})\](:?)").expect("valid regex"));

/// Merges, validates, normalises and de-duplicates the citations of one answer.
pub fn extract(
    content: &str,
    api_citations: &[String],
    search_results: &[SearchHit],
    annotations: &[SearchHit],
    accessed_at: DateTime<Utc>,
) -> Citations {
    let mut out = Citations::default();
    let mut seen: Vec<String> = Vec::new();
    // Marker n is backed when the n-th citation, the search result n, or definition n is valid.
    let mut backed: Vec<u32> = Vec::new();

    let mut add = |raw: &str, hit: Option<&SearchHit>, marker: Option<u32>, out: &mut Citations| match normalise(raw) {
        Ok(url) => {
            if let Some(n) = marker {
                backed.push(n);
            }
            let title =
                hit.and_then(|h| h.title.as_deref()).map(str::trim).filter(|t| !t.is_empty()).map(str::to_owned);
            let snippet = hit.and_then(|h| h.snippet.as_deref()).and_then(snippet);
            match seen.iter().position(|u| *u == url) {
                Some(i) => {
                    let source = &mut out.sources[i];
                    source.title = source.title.take().or(title);
                    source.snippet = source.snippet.take().or(snippet);
                }
                None => {
                    seen.push(url.clone());
                    out.sources.push(Source { url, title, accessed_at, snippet });
                }
            }
        }
        Err(reason) => out.rejected.push(Rejected { url: raw.chars().take(300).collect(), reason: reason.to_owned() }),
    };

    for (i, url) in api_citations.iter().enumerate() {
        add(url, None, marker_number(i), &mut out);
    }
    for (i, hit) in search_results.iter().enumerate() {
        add(&hit.url, Some(hit), hit.id.or_else(|| marker_number(i)), &mut out);
    }
    for hit in annotations {
        add(&hit.url, Some(hit), None, &mut out);
    }
    for cap in REFERENCE_DEFINITION.captures_iter(content) {
        let n = cap[1].parse::<u32>().ok();
        add(&cap[2], None, n, &mut out);
    }

    let mut unbacked: Vec<u32> = INLINE_MARKER
        .captures_iter(content)
        .filter(|cap| cap[2].is_empty())
        .filter_map(|cap| cap[1].parse::<u32>().ok())
        .filter(|n| !backed.contains(n))
        .collect();
    unbacked.sort_unstable();
    unbacked.dedup();
    out.unbacked_markers = unbacked;
    out
}

fn marker_number(index: usize) -> Option<u32> {
    u32::try_from(index + 1).ok()
}

/// Characters that end a URL found in running text: CJK punctuation and characters that are
/// never literal in a URL.
fn ends_url(c: char) -> bool {
    matches!(
        c,
        '。' | '，'
            | '、'
            | '；'
            | '：'
            | '！'
            | '？'
            | '「'
            | '」'
            | '『'
            | '』'
            | '（'
            | '）'
            | '【'
            | '】'
            | '《'
            | '》'
            | '<'
            | '>'
            | '"'
            | '`'
            | '{'
            | '}'
            | '|'
            | '\\'
            | '^'
    ) || c.is_whitespace()
}

/// Validates and normalises one URL: http(s) only, a public host name, no user or password;
/// trailing sentence punctuation (and an unbalanced closing bracket), the fragment and `utm_*`
/// parameters are dropped. Returns the reason when the URL is refused.
pub fn normalise(raw: &str) -> Result<String, &'static str> {
    let mut text = raw.trim();
    if let Some(end) = text.find(ends_url) {
        text = &text[..end];
    }
    loop {
        let trimmed = text.trim_end_matches(['.', ',', ';', ':', '!', '?', '\'', '*', '_']);
        let trimmed = strip_unbalanced(trimmed, '(', ')');
        let trimmed = strip_unbalanced(trimmed, '[', ']');
        if trimmed.len() == text.len() {
            break;
        }
        text = trimmed;
    }
    if text.len() > 2048 {
        return Err("longer than 2048 characters");
    }
    let mut url = Url::parse(text).map_err(|_| "not a URL")?;
    if !matches!(url.scheme(), "http" | "https") {
        return Err("scheme is not http or https");
    }
    if !url.username().is_empty() || url.password().is_some() {
        return Err("contains credentials");
    }
    match url.host() {
        None => return Err("no host"),
        Some(Host::Domain(d)) if !public_domain(d) => return Err("host is not a public domain"),
        Some(Host::Ipv4(ip)) if !public_v4(ip) => return Err("host is not a public address"),
        Some(Host::Ipv6(ip)) if !public_v6(ip) => return Err("host is not a public address"),
        Some(_) => {}
    }
    url.set_fragment(None);
    if url.query().is_some() {
        let kept: Vec<(String, String)> = url
            .query_pairs()
            .filter(|(k, _)| !k.starts_with("utm_"))
            .map(|(k, v)| (k.into_owned(), v.into_owned()))
            .collect();
        if kept.is_empty() {
            url.set_query(None);
        } else {
            url.query_pairs_mut().clear().extend_pairs(kept);
        }
    }
    Ok(url.into())
}

/// Names that resolve only inside a network (RFC 6761, 6762, 8375 and common practice).
const PRIVATE_SUFFIXES: [&str; 7] = ["localhost", "local", "internal", "localdomain", "home.arpa", "lan", "intranet"];

/// A name under a public suffix: dotted, no empty label, not a private one (a trailing dot,
/// `localhost.`, is the same name).
fn public_domain(d: &str) -> bool {
    let d = d.strip_suffix('.').unwrap_or(d);
    d.contains('.')
        && !d.split('.').any(str::is_empty)
        && !PRIVATE_SUFFIXES.iter().any(|s| d == *s || d.strip_suffix(s).is_some_and(|rest| rest.ends_with('.')))
}

/// An IPv4 address reachable on the internet: not private (RFC 1918), shared (100.64/10),
/// loopback, link-local, "this network", documentation, benchmarking, multicast or reserved.
fn public_v4(ip: Ipv4Addr) -> bool {
    let [a, b, c, _] = ip.octets();
    !(ip.is_private()
        || ip.is_loopback()
        || ip.is_link_local()
        || ip.is_unspecified()
        || ip.is_broadcast()
        || ip.is_multicast()
        || ip.is_documentation()
        || a == 0
        || (a == 100 && (b & 0xc0) == 64)
        || (a == 192 && b == 0 && c == 0)
        || (a == 198 && (b & 0xfe) == 18)
        || a >= 240)
}

/// An IPv6 address reachable on the internet; one that embeds an IPv4 address (mapped,
/// compatible, NAT64, 6to4) is judged by it.
fn public_v6(ip: Ipv6Addr) -> bool {
    let (s, o) = (ip.segments(), ip.octets());
    let embedded = Ipv4Addr::new(o[12], o[13], o[14], o[15]);
    if ip.to_ipv4_mapped().is_some() || s[..6] == [0; 6] || (s[0] == 0x64 && s[1] == 0xff9b && s[2..6] == [0; 4]) {
        return public_v4(embedded);
    }
    if s[0] == 0x2002 {
        return public_v4(Ipv4Addr::new((s[1] >> 8) as u8, s[1] as u8, (s[2] >> 8) as u8, s[2] as u8));
    }
    !(ip.is_multicast()
        || (s[0] & 0xfe00) == 0xfc00
        || (s[0] & 0xffc0) == 0xfe80
        || (s[0] & 0xffc0) == 0xfec0
        || (s[0] == 0x2001 && s[1] == 0x0db8))
}

fn strip_unbalanced(text: &str, open: char, close: char) -> &str {
    if text.ends_with(close) && text.matches(close).count() > text.matches(open).count() {
        &text[..text.len() - close.len_utf8()]
    } else {
        text
    }
}

/// Renders seed 000's reference block: `## 參考資料`, a blank line, then `n. [title](url)`.
/// A source without a title is shown by its host name. Empty when there are no sources.
pub fn references_markdown(sources: &[Source]) -> String {
    if sources.is_empty() {
        return String::new();
    }
    let mut out = String::from("## 參考資料\n\n");
    for (i, s) in sources.iter().enumerate() {
        let title = s.title.clone().unwrap_or_else(|| {
            Url::parse(&s.url).ok().and_then(|u| u.host_str().map(str::to_owned)).unwrap_or_else(|| s.url.clone())
        });
        let title = title.replace('[', "\\[").replace(']', "\\]");
        let url = s.url.replace('(', "%28").replace(')', "%29");
        out.push_str(&format!("{}. [{}]({})\n", i + 1, title, url));
    }
    out
}

#[cfg(test)]
mod tests {
    use super::*;

    fn at() -> DateTime<Utc> {
        DateTime::parse_from_rfc3339("2025-01-01T00:00:00Z").unwrap().with_timezone(&Utc)
    }

    fn hit(url: &str, title: &str) -> SearchHit {
        SearchHit { url: url.into(), title: Some(title.into()), ..SearchHit::default() }
    }

    #[test]
    fn merges_api_citations_search_results_and_content_references_without_duplicates() {
        let content =
            "台灣咖啡市場成長 [1][2]。\n\n[3]: https://example.org/extra.\n[1]: https://example.com/a#section";
        let api = vec!["https://example.com/a".to_string(), "https://news.example.net/b".into()];
        let results = vec![hit("https://example.com/a", "Source A"), hit("https://news.example.net/b", "B")];
        let c = extract(content, &api, &results, &[], at());
        let urls: Vec<_> = c.sources.iter().map(|s| s.url.as_str()).collect();
        assert_eq!(urls, ["https://example.com/a", "https://news.example.net/b", "https://example.org/extra"]);
        assert_eq!(c.sources[0].title.as_deref(), Some("Source A"));
        assert_eq!(c.sources[2].title, None);
        assert!(c.unbacked_markers.is_empty());
        assert!(c.rejected.is_empty());
    }

    #[test]
    fn refuses_invalid_urls_and_says_why() {
        let api = vec![
            "ftp://example.com/file".to_string(),
            "https://user:pw@example.com/".into(),
            "not a url".into(),
            "http://localhost:8080/x".into(),
            "http://192.168.1.1/admin".into(),
            "https://ok.example.com/page".into(),
        ];
        let c = extract("", &api, &[], &[], at());
        assert_eq!(c.sources.len(), 1);
        assert_eq!(c.sources[0].url, "https://ok.example.com/page");
        let reasons: Vec<_> = c.rejected.iter().map(|r| r.reason.as_str()).collect();
        assert_eq!(
            reasons,
            [
                "scheme is not http or https",
                "contains credentials",
                "not a URL",
                "host is not a public domain",
                "host is not a public address"
            ]
        );
    }

    #[test]
    fn refuses_hosts_that_reach_inside() {
        for u in [
            "http://[::ffff:10.0.0.1]/",
            "http://[::ffff:a00:1]/",
            "http://[::ffff:127.0.0.1]/",
            "http://[::1]/",
            "http://[fe80::1]/",
            "http://[febf::1]/",
            "http://[64:ff9b::a9fe:a9fe]/",
            "http://[2002:a00:1::]/",
            "http://100.64.0.1/",
            "http://100.127.255.254/",
            "http://169.254.169.254/latest/meta-data/",
            "http://localhost./",
            "http://metadata.google.internal/",
            "http://a.internal./",
            "http://a.localhost./",
            "http://printer.lan/",
        ] {
            assert!(normalise(u).is_err(), "{u} reaches inside");
        }
        for u in ["http://100.63.255.255/", "http://100.128.0.1/", "http://[2606:4700::1111]/", "https://example.com./"]
        {
            assert!(normalise(u).is_ok(), "{u} is public");
        }
    }

    #[test]
    fn normalises_punctuation_fragments_and_tracking_parameters() {
        assert_eq!(normalise("https://Example.COM/a/b).").unwrap(), "https://example.com/a/b");
        assert_eq!(
            normalise("https://en.wikipedia.org/wiki/Foo_(bar)").unwrap(),
            "https://en.wikipedia.org/wiki/Foo_(bar)"
        );
        assert_eq!(normalise("https://example.com/x?utm_source=a&id=3#top").unwrap(), "https://example.com/x?id=3");
        assert_eq!(normalise("https://example.com/x?utm_source=a").unwrap(), "https://example.com/x");
        assert_eq!(normalise("https://example.com/新聞。更多內容").unwrap(), "https://example.com/%E6%96%B0%E8%81%9E");
        assert_eq!(normalise("https://example.com:443/").unwrap(), "https://example.com/");
    }

    #[test]
    fn reports_inline_markers_no_source_backs() {
        // [2] points at an invalid citation, [4] at nothing; [3] is defined in the content.
        let content = "A [1]. B [2]. C [3]. D [4][4].\n[3]: https://example.org/c";
        let api = vec!["https://example.com/a".to_string(), "javascript:alert(1)".into()];
        let c = extract(content, &api, &[], &[], at());
        assert_eq!(c.unbacked_markers, vec![2, 4]);
    }

    #[test]
    fn markers_name_search_result_ids_and_annotations_back_none() {
        // Results 5 and 7 (ids, not positions); [1] and [2] name no result; [9] an invalid one.
        let content = "A [5]. B [7]. C [1][2]. D [9].";
        let results = vec![
            SearchHit { id: Some(5), ..hit("https://example.com/five", "Five") },
            SearchHit { id: Some(7), ..hit("https://example.com/seven", "Seven") },
            SearchHit { id: Some(9), ..hit("https://user:pw@example.com/nine", "Nine") },
        ];
        let annotated = vec![hit("https://example.com/five#frag", "dup"), hit("https://example.net/annotated", "Note")];
        let c = extract(content, &[], &results, &annotated, at());
        let urls: Vec<_> = c.sources.iter().map(|s| s.url.as_str()).collect();
        assert_eq!(urls, ["https://example.com/five", "https://example.com/seven", "https://example.net/annotated"]);
        assert_eq!(c.sources[0].title.as_deref(), Some("Five"));
        assert_eq!(c.unbacked_markers, vec![1, 2, 9]);
        assert_eq!(c.rejected.len(), 1);
    }

    #[test]
    fn a_source_keeps_the_first_snippet_any_input_gives_cut_to_300_characters() {
        let long = "事".repeat(SNIPPET_CHARS + 50);
        let results = vec![
            SearchHit { snippet: Some("  ".into()), ..hit("https://example.com/a", "A") },
            SearchHit { snippet: Some(long), ..hit("https://example.com/b", "B") },
        ];
        let annotated = vec![SearchHit { snippet: Some("later".into()), ..hit("https://example.com/a", "A") }];
        let c = extract("", &[], &results, &annotated, at());
        assert_eq!(c.sources[0].snippet.as_deref(), Some("later"));
        assert_eq!(c.sources[1].snippet.as_ref().map(|s| s.chars().count()), Some(SNIPPET_CHARS));
        let json = serde_json::to_value(&c.sources[0]).unwrap();
        assert_eq!(json["snippet"], "later");
        assert!(
            serde_json::to_value(&extract("", &["https://example.com/c".into()], &[], &[], at()).sources[0])
                .unwrap()
                .get("snippet")
                .is_none()
        );
    }

    #[test]
    fn renders_the_reference_block_exactly_as_seed_000() {
        let sources = vec![
            Source {
                url: "https://example.com/source1".into(),
                title: Some("Source Title".into()),
                accessed_at: at(),
                snippet: None,
            },
            Source {
                url: "https://example.com/source2".into(),
                title: Some("Another Source".into()),
                accessed_at: at(),
                snippet: None,
            },
            Source { url: "https://docs.example.org/x".into(), title: None, accessed_at: at(), snippet: None },
        ];
        assert_eq!(
            references_markdown(&sources),
            "## 參考資料\n\n1. [Source Title](https://example.com/source1)\n2. [Another Source](https://example.com/source2)\n3. [docs.example.org](https://docs.example.org/x)\n"
        );
        assert_eq!(references_markdown(&[]), "");
    }

    #[test]
    fn serialises_accessed_at_as_seed_000_does() {
        let s = Source {
            url: "https://example.com/source1".into(),
            title: Some("Source Title".into()),
            accessed_at: at(),
            snippet: None,
        };
        assert_eq!(
            serde_json::to_value(&s).unwrap(),
            serde_json::json!({"url": "https://example.com/source1", "title": "Source Title", "accessed_at": "2025-01-01T00:00:00Z"})
        );
    }
}
