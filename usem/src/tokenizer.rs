//! The SentencePiece unigram tokenizer of `sp.model`, as the package's own pure-Python port
//! computes it (not as libsentencepiece does; the four differences are kept on purpose): the
//! model's precompiled `nmt_nfkc` map (a darts-clone trie over UTF-8 bytes, greedy longest
//! match), whitespace collapsed to `▁` with a dummy prefix, then a Viterbi over code points
//! with scores summed in f64, the first candidate winning ties, every piece matchable
//! (`<s>` in the text too), and each unknown code point its own `<unk>`.

use std::collections::HashMap;

pub const UNK: u32 = 0;
pub const BOS: u32 = 1;
pub const EOS: u32 = 2;
/// The longest piece, in code points.
const MAX_PIECE: usize = 16;

pub struct Tokenizer {
    ids: HashMap<String, u32>,
    scores: Vec<f32>,
    unk_score: f64,
    trie: Vec<u32>,
    pool: Vec<u8>,
}

/// A protobuf field's payload (a varint's value is not needed here).
enum Field<'a> {
    Varint,
    Bytes(&'a [u8]),
    Fixed32([u8; 4]),
}

fn varint(b: &[u8], at: &mut usize) -> Result<u64, String> {
    let mut value = 0u64;
    for shift in (0..64).step_by(7) {
        let byte = *b.get(*at).ok_or("sp.model: truncated varint")?;
        *at += 1;
        value |= u64::from(byte & 0x7f) << shift;
        if byte < 0x80 {
            return Ok(value);
        }
    }
    Err("sp.model: varint too long".into())
}

fn fields(b: &[u8]) -> Result<Vec<(u64, Field<'_>)>, String> {
    let (mut out, mut at) = (Vec::new(), 0);
    while at < b.len() {
        let tag = varint(b, &mut at)?;
        let take = |at: &mut usize, n: usize| -> Result<&[u8], String> {
            let s = b.get(*at..*at + n).ok_or("sp.model: truncated field")?;
            *at += n;
            Ok(s)
        };
        let field = match tag & 7 {
            0 => {
                varint(b, &mut at)?;
                Field::Varint
            }
            1 => Field::Bytes(take(&mut at, 8)?),
            2 => {
                let n = varint(b, &mut at)? as usize;
                Field::Bytes(take(&mut at, n)?)
            }
            5 => Field::Fixed32(take(&mut at, 4)?.try_into().expect("4 bytes")),
            w => return Err(format!("sp.model: wire type {w}")),
        };
        out.push((tag >> 3, field));
    }
    Ok(out)
}

impl Tokenizer {
    /// Reads a SentencePiece `ModelProto`: pieces (field 1: string 1, score 2) and the
    /// normaliser's precompiled map (field 3, its field 2).
    pub fn from_model(bytes: &[u8]) -> Result<Self, String> {
        let (mut ids, mut scores, mut charsmap) = (HashMap::new(), Vec::new(), None);
        for (number, field) in fields(bytes)? {
            match (number, field) {
                (1, Field::Bytes(piece)) => {
                    let (mut text, mut score) = (None, 0.0f32);
                    for (n, f) in fields(piece)? {
                        match (n, f) {
                            (1, Field::Bytes(s)) => text = Some(std::str::from_utf8(s).map_err(|e| e.to_string())?),
                            (2, Field::Fixed32(s)) => score = f32::from_le_bytes(s),
                            _ => {}
                        }
                    }
                    let text = text.ok_or("sp.model: a piece without its string")?;
                    ids.insert(text.to_owned(), scores.len() as u32);
                    scores.push(score);
                }
                (3, Field::Bytes(spec)) => {
                    for (n, f) in fields(spec)? {
                        if let (2, Field::Bytes(map)) = (n, f) {
                            charsmap = Some(map);
                        }
                    }
                }
                _ => {}
            }
        }
        let map = charsmap.ok_or("sp.model: no precompiled charsmap")?;
        let size = u32::from_le_bytes(map.get(..4).ok_or("charsmap truncated")?.try_into().expect("4")) as usize;
        let units = map.get(4..4 + size).ok_or("charsmap truncated")?;
        let trie = units.chunks_exact(4).map(|u| u32::from_le_bytes(u.try_into().expect("4"))).collect();
        let min = scores.iter().copied().fold(f32::MAX, f32::min);
        if scores.len() <= EOS as usize {
            return Err("sp.model: no pieces".into());
        }
        Ok(Tokenizer { ids, scores, unk_score: f64::from(min) - 10.0, trie, pool: map[4 + size..].to_vec() })
    }

    /// The longest match of the map at `bytes[at..]`: its replacement and the bytes it
    /// consumed; one character unchanged where nothing matches.
    fn prefix<'a>(&'a self, bytes: &'a [u8], at: usize) -> (&'a [u8], usize) {
        let offset = |u: u32| ((u >> 10) << ((u & 0x200) >> 6)) as usize;
        let unit = |i: usize| self.trie.get(i).copied().unwrap_or(0);
        let mut node = offset(unit(0));
        let (mut best_len, mut best) = (0, 0usize);
        for (i, &c) in bytes.iter().enumerate().skip(at) {
            node ^= c as usize;
            let u = unit(node);
            if u & 0x8000_00ff != u32::from(c) {
                break;
            }
            node ^= offset(u);
            if (u >> 8) & 1 == 1 {
                best_len = i + 1 - at;
                best = (unit(node) & 0x7fff_ffff) as usize;
            }
        }
        if best_len > 0 && best < self.pool.len() {
            let end = self.pool[best..].iter().position(|&b| b == 0).map_or(self.pool.len(), |n| best + n);
            return (&self.pool[best..end], best_len);
        }
        let lead = bytes[at];
        let n = match lead {
            0..0x80 => 1,
            _ if lead >> 5 == 6 => 2,
            _ if lead >> 4 == 0xe => 3,
            _ => 4,
        };
        let n = n.min(bytes.len() - at);
        (&bytes[at..at + n], n)
    }

    /// The normalised text: mapped, whitespace runs as one `▁`, a leading `▁`, none trailing;
    /// "" for blank input.
    pub fn normalize(&self, text: &str) -> String {
        let bytes = text.as_bytes();
        let mut at = 0;
        while at < bytes.len() {
            let (p, n) = self.prefix(bytes, at);
            if p != b" " {
                break;
            }
            at += n;
        }
        if at >= bytes.len() {
            return String::new();
        }
        let mut out: Vec<u8> = "▁".into();
        let mut after_space = true;
        while at < bytes.len() {
            let (mut p, n) = self.prefix(bytes, at);
            at += n;
            if after_space {
                while let [b' ', rest @ ..] = p {
                    p = rest;
                }
            }
            if !p.is_empty() {
                for &b in p {
                    if b == b' ' {
                        out.extend_from_slice("▁".as_bytes());
                    } else {
                        out.push(b);
                    }
                }
                after_space = p.ends_with(b" ");
            }
        }
        while out.ends_with("▁".as_bytes()) {
            out.truncate(out.len() - 3);
        }
        // The map's replacements are UTF-8; a cut character (malformed input) is replaced.
        String::from_utf8(out).unwrap_or_else(|e| String::from_utf8_lossy(e.as_bytes()).into_owned())
    }

    /// `<s>`, the pieces of `text`, `</s>` (`<s> <unk> </s>` for blank text).
    pub fn ids(&self, text: &str) -> Vec<u32> {
        let s = self.normalize(text);
        if s.is_empty() {
            return vec![BOS, UNK, EOS];
        }
        // Byte offsets of each code point, and the end.
        let mut at: Vec<usize> = s.char_indices().map(|(i, _)| i).collect();
        let len = at.len();
        at.push(s.len());
        let mut best = vec![-1e38f64; len + 1];
        best[0] = 0.0;
        let (mut start, mut piece) = (vec![0usize; len + 1], vec![0u32; len + 1]);
        for i in 0..len {
            let mut single = false;
            for j in i + 1..=(i + MAX_PIECE).min(len) {
                if let Some(&id) = self.ids.get(&s[at[i]..at[j]]) {
                    let score = best[i] + f64::from(self.scores[id as usize]);
                    if score > best[j] {
                        (best[j], start[j], piece[j]) = (score, i, id);
                    }
                    single |= j == i + 1;
                }
            }
            if !single {
                let score = best[i] + self.unk_score;
                if score > best[i + 1] {
                    (best[i + 1], start[i + 1], piece[i + 1]) = (score, i, UNK);
                }
            }
        }
        let mut ids = vec![EOS];
        let mut end = len;
        while end > 0 {
            ids.push(piece[end]);
            end = start[end];
        }
        ids.push(BOS);
        ids.reverse();
        ids
    }

    pub fn vocabulary(&self) -> usize {
        self.scores.len()
    }
}
