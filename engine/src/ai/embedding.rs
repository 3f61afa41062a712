//! Sentence embeddings: the [`Embedder`] trait that turns a text into a unit vector, and its two
//! implementations.
//!
//! - [`TestEmbedder`]: a deterministic hashed bag of words (64 dimensions). Every host gives the
//!   same vectors bit for bit (sums of ±1 and one square root), so contract scenarios can pin
//!   which items are related. It knows no meaning, only shared words.
//! - [`StaticEmbedder`]: a static embedding model (the model2vec method): one vector per token of
//!   a WordPiece vocabulary, distilled from a sentence transformer; a text's vector is the mean of
//!   its tokens' vectors, normalized. Loaded from bytes (a safetensors file with an `embeddings`
//!   tensor `[vocab, dim]` of F32, F16 or I8 with per-row `scales`, and the `tokenizer.json` of
//!   the model it was distilled from), so the server reads it from a directory and the browser
//!   from downloaded bytes. `scripts/prepare-embedding-model.sh` makes one.
//!
//! The tokenizer is our own implementation of BERT's (normalizer, pre-tokenizer and WordPiece)
//! over the vocabulary of `tokenizer.json`; `engine/tests/embedding.rs` checks it against
//! token ids the reference tokenizer produced.

use std::collections::HashMap;

use unicode_normalization::UnicodeNormalization;

/// Turns texts into unit vectors; similar texts get vectors with a high dot product (cosine).
pub trait Embedder: Send + Sync {
    /// Names the model (with anything that changes its vectors): stored vectors made by another
    /// id are recomputed when a store is opened.
    fn id(&self) -> String;
    /// Dimensions of the vectors.
    fn dim(&self) -> usize;
    /// The vector of `text`: unit length, or all zeros when the text has nothing the model knows.
    fn embed(&self, text: &str) -> Vec<f32>;
}

/// Cosine similarity of two vectors of unit length (their dot product), computed in `f64`.
pub fn cosine(a: &[f32], b: &[f32]) -> f64 {
    a.iter()
        .zip(b)
        .map(|(x, y)| f64::from(*x) * f64::from(*y))
        .sum()
}

/// Scale `v` to unit length (a zero vector stays zero).
pub fn normalize(v: &mut [f32]) {
    let norm = v
        .iter()
        .map(|x| f64::from(*x) * f64::from(*x))
        .sum::<f64>()
        .sqrt();
    if norm > 0.0 {
        for x in v.iter_mut() {
            *x = (f64::from(*x) / norm) as f32;
        }
    }
}

/// A vector as stored: little-endian `f32`s.
pub fn to_bytes(v: &[f32]) -> Vec<u8> {
    v.iter().flat_map(|x| x.to_le_bytes()).collect()
}

/// A stored vector (trailing bytes that do not make a whole `f32` are ignored).
pub fn from_bytes(b: &[u8]) -> Vec<f32> {
    b.chunks_exact(4)
        .map(|c| f32::from_le_bytes([c[0], c[1], c[2], c[3]]))
        .collect()
}

/// The deterministic test embedder: each lower-cased word of two or more letters or digits adds
/// ±1 to one of 64 dimensions (chosen by its FNV-1a hash); the sum is normalized. Texts that share
/// words are similar, others are not.
#[derive(Debug, Default, Clone, Copy)]
pub struct TestEmbedder;

/// Dimensions of [`TestEmbedder`] vectors.
const TEST_DIM: usize = 64;

fn fnv1a(s: &str) -> u64 {
    let mut h: u64 = 0xcbf2_9ce4_8422_2325;
    for b in s.bytes() {
        h ^= u64::from(b);
        h = h.wrapping_mul(0x0000_0100_0000_01b3);
    }
    h
}

impl Embedder for TestEmbedder {
    fn id(&self) -> String {
        "test-hashed-words-64".into()
    }

    fn dim(&self) -> usize {
        TEST_DIM
    }

    fn embed(&self, text: &str) -> Vec<f32> {
        let mut v = vec![0f32; TEST_DIM];
        for word in text
            .split(|c: char| !c.is_alphanumeric())
            .filter(|w| w.chars().count() >= 2)
        {
            let h = fnv1a(&word.to_lowercase());
            let slot = (h % TEST_DIM as u64) as usize;
            v[slot] += if (h >> 32) & 1 == 0 { 1.0 } else { -1.0 };
        }
        normalize(&mut v);
        v
    }
}

/// Why a model could not be loaded.
#[derive(Debug, thiserror::Error)]
#[error("embedding model: {0}")]
pub struct ModelError(pub String);

fn bad(msg: impl Into<String>) -> ModelError {
    ModelError(msg.into())
}

/// BERT's tokenizer (uncased): clean and lower-case the text, strip accents, split on whitespace
/// and punctuation, then split each word into the longest vocabulary pieces (`##` continues a
/// word); a word that cannot be split is the unknown token.
pub struct WordPiece {
    vocab: HashMap<String, u32>,
    unk: Option<u32>,
    lowercase: bool,
    strip_accents: bool,
    max_chars: usize,
}

/// The parts of `tokenizer.json` this tokenizer reads.
#[derive(serde::Deserialize)]
struct TokenizerJson {
    normalizer: Option<NormalizerJson>,
    model: WordPieceJson,
}

#[derive(serde::Deserialize)]
struct NormalizerJson {
    #[serde(rename = "type")]
    kind: String,
    #[serde(default)]
    lowercase: Option<bool>,
    #[serde(default)]
    strip_accents: Option<bool>,
}

#[derive(serde::Deserialize)]
struct WordPieceJson {
    #[serde(rename = "type")]
    kind: String,
    unk_token: String,
    #[serde(default)]
    max_input_chars_per_word: Option<usize>,
    vocab: HashMap<String, u32>,
}

impl WordPiece {
    /// The tokenizer described by a Hugging Face `tokenizer.json` (a WordPiece model with a
    /// `BertNormalizer`).
    pub fn from_json(bytes: &[u8]) -> Result<Self, ModelError> {
        let t: TokenizerJson = serde_json::from_slice(bytes)
            .map_err(|e| bad(format!("tokenizer.json does not parse: {e}")))?;
        if t.model.kind != "WordPiece" {
            return Err(bad(format!(
                "tokenizer model {} is not WordPiece",
                t.model.kind
            )));
        }
        let (lowercase, strip_accents) = match &t.normalizer {
            Some(n) if n.kind == "BertNormalizer" => {
                let lower = n.lowercase.unwrap_or(true);
                (lower, n.strip_accents.unwrap_or(lower))
            }
            Some(n) => return Err(bad(format!("normalizer {} is not supported", n.kind))),
            None => (false, false),
        };
        Ok(WordPiece {
            unk: t.model.vocab.get(&t.model.unk_token).copied(),
            vocab: t.model.vocab,
            lowercase,
            strip_accents,
            max_chars: t.model.max_input_chars_per_word.unwrap_or(100),
        })
    }

    /// Size of the vocabulary (one more than its largest id).
    pub fn vocab_len(&self) -> usize {
        self.vocab.values().max().map_or(0, |m| *m as usize + 1)
    }

    /// The id of a token, if the vocabulary has it.
    pub fn token_id(&self, token: &str) -> Option<u32> {
        self.vocab.get(token).copied()
    }

    /// The unknown token's id.
    pub fn unk_id(&self) -> Option<u32> {
        self.unk
    }

    fn normalize(&self, text: &str) -> String {
        let mut out = String::with_capacity(text.len());
        for c in text.chars() {
            if c == '\0' || c == '\u{fffd}' || (c.is_control() && !c.is_whitespace()) {
                continue;
            }
            if is_cjk(c) {
                out.push(' ');
                out.push(c);
                out.push(' ');
            } else if c.is_whitespace() {
                out.push(' ');
            } else {
                out.push(c);
            }
        }
        let out = if self.strip_accents {
            out.nfd()
                .filter(|c| !is_combining_mark(*c))
                .collect::<String>()
        } else {
            out
        };
        if self.lowercase {
            out.to_lowercase()
        } else {
            out
        }
    }

    /// The token ids of `text`, without special tokens.
    pub fn encode(&self, text: &str) -> Vec<u32> {
        let norm = self.normalize(text);
        let mut ids = Vec::new();
        let mut word = String::new();
        for c in norm.chars() {
            if c.is_whitespace() {
                self.push_word(&word, &mut ids);
                word.clear();
            } else if is_punctuation(c) {
                self.push_word(&word, &mut ids);
                word.clear();
                let mut buf = [0u8; 4];
                self.push_word(c.encode_utf8(&mut buf), &mut ids);
            } else {
                word.push(c);
            }
        }
        self.push_word(&word, &mut ids);
        ids
    }

    fn push_word(&self, word: &str, ids: &mut Vec<u32>) {
        if word.is_empty() {
            return;
        }
        if word.chars().count() > self.max_chars {
            ids.extend(self.unk);
            return;
        }
        let mut pieces = Vec::new();
        let mut start = 0;
        while start < word.len() {
            let mut end = word.len();
            let mut found = None;
            while start < end {
                let piece = if start > 0 {
                    format!("##{}", &word[start..end])
                } else {
                    word[start..end].to_string()
                };
                if let Some(id) = self.vocab.get(&piece) {
                    found = Some(*id);
                    break;
                }
                // step back one character
                end = word[..end]
                    .char_indices()
                    .next_back()
                    .map_or(start, |(i, _)| i);
            }
            match found {
                Some(id) => {
                    pieces.push(id);
                    start = end;
                }
                None => {
                    ids.extend(self.unk);
                    return;
                }
            }
        }
        ids.extend(pieces);
    }
}

fn is_combining_mark(c: char) -> bool {
    matches!(c as u32, 0x0300..=0x036F | 0x1AB0..=0x1AFF | 0x1DC0..=0x1DFF | 0x20D0..=0x20FF | 0xFE20..=0xFE2F)
}

fn is_cjk(c: char) -> bool {
    matches!(c as u32,
        0x4E00..=0x9FFF | 0x3400..=0x4DBF | 0x20000..=0x2A6DF | 0x2A700..=0x2B73F
        | 0x2B740..=0x2B81F | 0x2B820..=0x2CEAF | 0xF900..=0xFAFF | 0x2F800..=0x2FA1F)
}

/// BERT's punctuation: every ASCII non-alphanumeric printable character, and other characters
/// that are neither letters, digits, marks nor whitespace (Unicode punctuation, approximated).
fn is_punctuation(c: char) -> bool {
    if c.is_ascii() {
        return c.is_ascii_punctuation();
    }
    !(c.is_alphanumeric() || c.is_whitespace() || is_combining_mark(c) || is_symbol(c))
}

/// Common Unicode symbols (currency, maths, arrows, dingbats), which BERT keeps inside words.
fn is_symbol(c: char) -> bool {
    matches!(c as u32, 0x20A0..=0x20CF | 0x2190..=0x23FF | 0x2500..=0x27BF | 0x00A2..=0x00A9 | 0x00AC..=0x00B4 | 0x00B8 | 0x00D7 | 0x00F7)
}

/// A static embedding model: a tokenizer and one vector per token.
pub struct StaticEmbedder {
    tokenizer: WordPiece,
    dim: usize,
    rows: usize,
    vectors: Vec<f32>,
    id: String,
}

impl StaticEmbedder {
    /// The model in `safetensors` (tensor `embeddings` `[vocab, dim]`, F32, F16, or I8 with an
    /// F32 tensor `scales` `[vocab]`) with the tokenizer of `tokenizer_json`. `name` names it in
    /// [`Embedder::id`] (with a digest of the weights' size and dimensions).
    pub fn from_bytes(
        name: &str,
        safetensors: &[u8],
        tokenizer_json: &[u8],
    ) -> Result<Self, ModelError> {
        let tokenizer = WordPiece::from_json(tokenizer_json)?;
        let tensors = parse_safetensors(safetensors)?;
        let emb = tensors
            .iter()
            .find(|t| t.name == "embeddings")
            .ok_or_else(|| bad("no `embeddings` tensor"))?;
        let [rows, dim] = emb.shape[..] else {
            return Err(bad("`embeddings` is not two-dimensional"));
        };
        let values = match emb.dtype.as_str() {
            "F32" => emb
                .data
                .chunks_exact(4)
                .map(|c| f32::from_le_bytes([c[0], c[1], c[2], c[3]]))
                .collect::<Vec<_>>(),
            "F16" => emb
                .data
                .chunks_exact(2)
                .map(|c| f16_to_f32(u16::from_le_bytes([c[0], c[1]])))
                .collect(),
            "I8" => {
                let scales = tensors
                    .iter()
                    .find(|t| t.name == "scales" && t.dtype == "F32")
                    .ok_or_else(|| bad("I8 `embeddings` without F32 `scales`"))?;
                let scales: Vec<f32> = scales
                    .data
                    .chunks_exact(4)
                    .map(|c| f32::from_le_bytes([c[0], c[1], c[2], c[3]]))
                    .collect();
                if scales.len() != rows {
                    return Err(bad("`scales` does not have one value per row"));
                }
                emb.data
                    .iter()
                    .enumerate()
                    .map(|(i, b)| f32::from(*b as i8) * scales[i / dim.max(1)])
                    .collect()
            }
            other => return Err(bad(format!("dtype {other} is not supported"))),
        };
        if values.len() != rows * dim {
            return Err(bad("`embeddings` data does not match its shape"));
        }
        if tokenizer.vocab_len() > rows {
            return Err(bad(format!(
                "the tokenizer has {} tokens, the model {rows} rows",
                tokenizer.vocab_len()
            )));
        }
        Ok(StaticEmbedder {
            id: format!("static:{name}:{rows}x{dim}:{}", safetensors.len()),
            tokenizer,
            dim,
            rows,
            vectors: values,
        })
    }

    /// The tokenizer.
    pub fn tokenizer(&self) -> &WordPiece {
        &self.tokenizer
    }
}

impl Embedder for StaticEmbedder {
    fn id(&self) -> String {
        self.id.clone()
    }

    fn dim(&self) -> usize {
        self.dim
    }

    fn embed(&self, text: &str) -> Vec<f32> {
        let mut v = vec![0f32; self.dim];
        let mut n = 0usize;
        for id in self.tokenizer.encode(text) {
            if Some(id) == self.tokenizer.unk || id as usize >= self.rows {
                continue;
            }
            let row = &self.vectors[id as usize * self.dim..(id as usize + 1) * self.dim];
            for (a, b) in v.iter_mut().zip(row) {
                *a += b;
            }
            n += 1;
        }
        if n > 0 {
            normalize(&mut v);
        }
        v
    }
}

/// One tensor of a safetensors file.
struct Tensor<'a> {
    name: String,
    dtype: String,
    shape: Vec<usize>,
    data: &'a [u8],
}

#[derive(serde::Deserialize)]
struct TensorInfo {
    dtype: String,
    shape: Vec<usize>,
    data_offsets: [usize; 2],
}

/// The tensors of a safetensors file: an 8-byte little-endian header length, a JSON header
/// naming each tensor's dtype, shape and byte range, then the data.
fn parse_safetensors(bytes: &[u8]) -> Result<Vec<Tensor<'_>>, ModelError> {
    let len_bytes: [u8; 8] = bytes
        .get(..8)
        .and_then(|b| b.try_into().ok())
        .ok_or_else(|| bad("safetensors file too short"))?;
    let header_len = usize::try_from(u64::from_le_bytes(len_bytes))
        .map_err(|_| bad("safetensors header too long"))?;
    let header = bytes
        .get(8..8usize.saturating_add(header_len))
        .ok_or_else(|| bad("safetensors header truncated"))?;
    let data = &bytes[8 + header_len..];
    let map: HashMap<String, serde_json::Value> =
        serde_json::from_slice(header).map_err(|e| bad(format!("safetensors header: {e}")))?;
    let mut out = Vec::new();
    for (name, v) in map {
        if name == "__metadata__" {
            continue;
        }
        let info: TensorInfo = serde_json::from_value(v)
            .map_err(|e| bad(format!("safetensors tensor {name}: {e}")))?;
        let [start, end] = info.data_offsets;
        let slice = data
            .get(start..end)
            .ok_or_else(|| bad(format!("tensor {name} lies outside the file")))?;
        out.push(Tensor {
            name,
            dtype: info.dtype,
            shape: info.shape,
            data: slice,
        });
    }
    Ok(out)
}

/// A tiny static model the project generates (no download): `(model.safetensors,
/// tokenizer.json)` bytes for tests and CI. Its vocabulary is the special tokens, the ASCII
/// punctuation and `words`; each word's vector is the [`TestEmbedder`] vector of the word, so texts
/// sharing words are similar, and it exercises the whole static-model path (safetensors with I8
/// rows and scales, WordPiece, mean pooling).
pub fn tiny_model(words: &[&str]) -> (Vec<u8>, Vec<u8>) {
    let mut vocab: Vec<String> = ["[PAD]", "[UNK]", "[CLS]", "[SEP]", "[MASK]"]
        .iter()
        .map(|s| s.to_string())
        .collect();
    vocab.extend(
        (b'!'..=b'~')
            .filter(u8::is_ascii_punctuation)
            .map(|b| (b as char).to_string()),
    );
    for w in words {
        let w = w.to_lowercase();
        if !vocab.contains(&w) {
            vocab.push(w);
        }
    }
    let rows = vocab.len();
    let mut quant = Vec::with_capacity(rows * TEST_DIM);
    let mut scales = Vec::with_capacity(rows);
    for t in &vocab {
        let v = if t.starts_with('[') || t.chars().count() < 2 {
            vec![0f32; TEST_DIM]
        } else {
            TestEmbedder.embed(t)
        };
        let max = v.iter().fold(0f32, |m, x| m.max(x.abs()));
        let scale = if max > 0.0 { max / 127.0 } else { 1.0 };
        scales.push(scale);
        quant.extend(v.iter().map(|x| (x / scale).round() as i8 as u8));
    }
    let scale_bytes: Vec<u8> = scales.iter().flat_map(|s| s.to_le_bytes()).collect();
    let header = serde_json::json!({
        "embeddings": {"dtype": "I8", "shape": [rows, TEST_DIM], "data_offsets": [0, quant.len()]},
        "scales": {"dtype": "F32", "shape": [rows], "data_offsets": [quant.len(), quant.len() + scale_bytes.len()]},
    });
    let header = serde_json::to_vec(&header).unwrap_or_default();
    let mut model = (header.len() as u64).to_le_bytes().to_vec();
    model.extend_from_slice(&header);
    model.extend_from_slice(&quant);
    model.extend_from_slice(&scale_bytes);
    let map: serde_json::Map<String, serde_json::Value> = vocab
        .iter()
        .enumerate()
        .map(|(i, t)| (t.clone(), serde_json::Value::from(i)))
        .collect();
    let tokenizer = serde_json::json!({
        "normalizer": {"type": "BertNormalizer", "clean_text": true, "handle_chinese_chars": true,
                       "strip_accents": null, "lowercase": true},
        "pre_tokenizer": {"type": "BertPreTokenizer"},
        "model": {"type": "WordPiece", "unk_token": "[UNK]", "continuing_subword_prefix": "##",
                  "max_input_chars_per_word": 100, "vocab": map}
    });
    (model, serde_json::to_vec(&tokenizer).unwrap_or_default())
}

/// An IEEE half-precision float as `f32`.
fn f16_to_f32(h: u16) -> f32 {
    let sign = u32::from(h >> 15) << 31;
    let exp = u32::from((h >> 10) & 0x1f);
    let frac = u32::from(h & 0x3ff);
    let bits = match (exp, frac) {
        (0, 0) => sign,
        (0, f) => {
            // subnormal: normalize it
            let mut e = 127 - 15 + 1;
            let mut f = f;
            while f & 0x400 == 0 {
                f <<= 1;
                e -= 1;
            }
            sign | (e << 23) | ((f & 0x3ff) << 13)
        }
        (0x1f, f) => sign | 0x7f80_0000 | (f << 13),
        (e, f) => sign | ((e + 127 - 15) << 23) | (f << 13),
    };
    f32::from_bits(bits)
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn test_embedder_is_unit_and_word_based() {
        let e = TestEmbedder;
        let a = e.embed("Harbour tours in summer");
        let b = e.embed("harbour TOURS!");
        let c = e.embed("Quarterly budget report");
        assert!((cosine(&a, &a) - 1.0).abs() < 1e-6);
        assert!(cosine(&a, &b) > cosine(&a, &c));
        assert!(e.embed("").iter().all(|x| *x == 0.0));
    }

    #[test]
    fn the_tiny_model_loads_and_relates_shared_words() {
        let (model, tok) = tiny_model(&["harbour", "tours", "boat", "budget", "report"]);
        let m = StaticEmbedder::from_bytes("tiny", &model, &tok).unwrap();
        let a = m.embed("Harbour tours!");
        let b = m.embed("boat tours of the harbour");
        let c = m.embed("budget report");
        assert!((cosine(&a, &a) - 1.0).abs() < 1e-5);
        assert!(cosine(&a, &b) > 0.5, "{}", cosine(&a, &b));
        assert!(cosine(&a, &b) > cosine(&a, &c));
    }

    #[test]
    fn half_floats_decode() {
        assert_eq!(f16_to_f32(0x3c00), 1.0);
        assert_eq!(f16_to_f32(0xc000), -2.0);
        assert_eq!(f16_to_f32(0x3555), 0.333_251_95);
        assert_eq!(f16_to_f32(0x0001), 5.960_464_5e-8);
    }

    fn tiny_tokenizer() -> Vec<u8> {
        let vocab: Vec<&str> = vec![
            "[PAD]", "[UNK]", "[CLS]", "[SEP]", "the", "harbour", "tour", "##s", "cafe", ",", "!",
        ];
        let map: serde_json::Map<String, serde_json::Value> = vocab
            .iter()
            .enumerate()
            .map(|(i, t)| (t.to_string(), serde_json::json!(i)))
            .collect();
        serde_json::to_vec(&serde_json::json!({
            "normalizer": {"type": "BertNormalizer", "lowercase": true, "strip_accents": null},
            "model": {"type": "WordPiece", "unk_token": "[UNK]", "continuing_subword_prefix": "##",
                      "max_input_chars_per_word": 100, "vocab": map}
        }))
        .unwrap()
    }

    #[test]
    fn wordpiece_splits_like_bert() {
        let t = WordPiece::from_json(&tiny_tokenizer()).unwrap();
        assert_eq!(
            t.encode("The Harbour tours, Café!"),
            vec![4, 5, 6, 7, 9, 8, 10]
        );
        assert_eq!(t.encode("zebra"), vec![1]);
    }

    #[test]
    fn static_model_means_token_rows() {
        let dim = 2usize;
        let rows = 11usize;
        let mut data = Vec::new();
        for r in 0..rows {
            for d in 0..dim {
                data.extend_from_slice(&(if d == r % 2 { 1f32 } else { 0f32 }).to_le_bytes());
            }
        }
        let header = serde_json::to_vec(&serde_json::json!({
            "embeddings": {"dtype": "F32", "shape": [rows, dim], "data_offsets": [0, data.len()]}
        }))
        .unwrap();
        let mut file = (header.len() as u64).to_le_bytes().to_vec();
        file.extend_from_slice(&header);
        file.extend_from_slice(&data);
        let m = StaticEmbedder::from_bytes("tiny", &file, &tiny_tokenizer()).unwrap();
        // "the" is row 4 (even: [1, 0]), "harbour" row 5 ([0, 1])
        assert_eq!(m.embed("the"), vec![1.0, 0.0]);
        let v = m.embed("the harbour");
        assert!(
            (v[0] - v[1]).abs() < 1e-6 && (v[0] - std::f32::consts::FRAC_1_SQRT_2).abs() < 1e-5
        );
        assert!(m.embed("zebra").iter().all(|x| *x == 0.0));
        assert!(StaticEmbedder::from_bytes("tiny", &file[..20], &tiny_tokenizer()).is_err());
    }
}
