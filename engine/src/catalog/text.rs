//! Full-text analysis for the `SearchableText` index: Unicode word segmentation (UAX #29),
//! case and accent folding, and Snowball stemming in the site's languages.
//!
//! The same analysis runs on the indexed text and on the query, so a query word matches every
//! inflection its stem covers ("houses" finds "house"), whatever its case and accents
//! ("Café" finds "cafe").

use std::collections::BTreeSet;

use rust_stemmers::{Algorithm, Stemmer};
use unicode_normalization::char::is_combining_mark;
use unicode_normalization::UnicodeNormalization;
use unicode_segmentation::UnicodeSegmentation;

/// Longest term kept in the index (in bytes); longer "words" (hashes, base64) are skipped.
pub const MAX_TERM_LEN: usize = 48;

/// `word` in lower case without accents (compatibility decomposition, combining marks dropped).
pub fn fold(word: &str) -> String {
    word.nfkd()
        .filter(|c| !is_combining_mark(*c))
        .flat_map(char::to_lowercase)
        .collect()
}

/// The Snowball algorithm for a language code (`en`, `de-AT`, `pt_BR`), if there is one.
pub fn algorithm(language: &str) -> Option<Algorithm> {
    let primary = language
        .split(['-', '_'])
        .next()
        .unwrap_or("")
        .to_ascii_lowercase();
    Some(match primary.as_str() {
        "ar" => Algorithm::Arabic,
        "da" => Algorithm::Danish,
        "nl" => Algorithm::Dutch,
        "en" => Algorithm::English,
        "fi" => Algorithm::Finnish,
        "fr" => Algorithm::French,
        "de" => Algorithm::German,
        "el" => Algorithm::Greek,
        "hu" => Algorithm::Hungarian,
        "it" => Algorithm::Italian,
        "no" | "nb" | "nn" => Algorithm::Norwegian,
        "pt" => Algorithm::Portuguese,
        "ro" => Algorithm::Romanian,
        "ru" => Algorithm::Russian,
        "es" => Algorithm::Spanish,
        "sv" => Algorithm::Swedish,
        "ta" => Algorithm::Tamil,
        "tr" => Algorithm::Turkish,
        _ => return None,
    })
}

/// The stemmers of a list of languages (those that have one, each once).
pub struct Analyzer {
    stemmers: Vec<Stemmer>,
}

impl Analyzer {
    /// An analyzer stemming in `languages` (no stemming when none of them has a stemmer).
    pub fn new<'a>(languages: impl IntoIterator<Item = &'a str>) -> Self {
        let mut algos: Vec<Algorithm> = Vec::new();
        for l in languages {
            if let Some(a) = algorithm(l) {
                if !algos
                    .iter()
                    .any(|x| std::mem::discriminant(x) == std::mem::discriminant(&a))
                {
                    algos.push(a);
                }
            }
        }
        Analyzer {
            stemmers: algos.into_iter().map(Stemmer::create).collect(),
        }
    }

    /// The index terms of one folded word: its stem in each language (the word itself without
    /// stemmers).
    pub fn stems(&self, folded: &str) -> BTreeSet<String> {
        if self.stemmers.is_empty() {
            return BTreeSet::from([folded.to_string()]);
        }
        self.stemmers
            .iter()
            .map(|s| s.stem(folded).into_owned())
            .filter(|t| !t.is_empty())
            .collect()
    }

    /// Every index term of `text`.
    pub fn terms(&self, text: &str, out: &mut BTreeSet<String>) {
        for w in text.unicode_words() {
            let f = fold(w);
            if f.is_empty() || f.len() > MAX_TERM_LEN {
                continue;
            }
            out.extend(self.stems(&f));
        }
    }

    /// The terms of `text` with how often each occurs (a word's stems each count once per
    /// occurrence of the word).
    pub fn term_counts(&self, text: &str, out: &mut std::collections::BTreeMap<String, u32>) {
        for w in text.unicode_words() {
            let f = fold(w);
            if f.is_empty() || f.len() > MAX_TERM_LEN {
                continue;
            }
            for s in self.stems(&f) {
                *out.entry(s).or_insert(0) += 1;
            }
        }
    }

    /// Parse a full-text query: every word must match (AND); a word ending in `*` matches every
    /// term it prefixes. Each word is given as the alternatives any of which may match (its stems
    /// in the site's languages), or as the prefixes to scan.
    pub fn query(&self, text: &str) -> Vec<QueryWord> {
        let mut out = Vec::new();
        for chunk in text.split_whitespace() {
            let prefix = chunk.ends_with('*');
            let words: Vec<&str> = chunk.unicode_words().collect();
            for (i, w) in words.iter().enumerate() {
                let f = fold(w);
                if f.is_empty() {
                    continue;
                }
                if prefix && i + 1 == words.len() {
                    // The stem of a partial word may be shorter than the word ("runn" → "run"):
                    // scan the common prefix of the word and each stem.
                    let prefixes = self
                        .stems(&f)
                        .into_iter()
                        .map(|s| common_prefix(&f, &s).to_string())
                        .filter(|p| !p.is_empty())
                        .collect();
                    out.push(QueryWord::Prefix(prefixes));
                } else if f.len() <= MAX_TERM_LEN {
                    out.push(QueryWord::Exact(self.stems(&f)));
                } else {
                    out.push(QueryWord::Exact(BTreeSet::new()));
                }
            }
        }
        out
    }
}

/// One word of a full-text query.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum QueryWord {
    /// Matches an object having any of these terms.
    Exact(BTreeSet<String>),
    /// Matches an object having a term starting with any of these.
    Prefix(BTreeSet<String>),
}

fn common_prefix<'a>(a: &'a str, b: &str) -> &'a str {
    let mut end = 0;
    for ((i, ca), cb) in a.char_indices().zip(b.chars()) {
        if ca != cb {
            break;
        }
        end = i + ca.len_utf8();
    }
    &a[..end]
}

/// The text of an HTML fragment without its tags (entities `&amp;` `&lt;` `&gt;` `&quot;`
/// `&nbsp;` decoded; others left as they are).
pub fn strip_tags(html: &str) -> String {
    let mut out = String::with_capacity(html.len());
    let mut in_tag = false;
    for c in html.chars() {
        match c {
            '<' => {
                in_tag = true;
                out.push(' ');
            }
            '>' if in_tag => in_tag = false,
            _ if !in_tag => out.push(c),
            _ => {}
        }
    }
    out.replace("&amp;", "&")
        .replace("&lt;", "<")
        .replace("&gt;", ">")
        .replace("&quot;", "\"")
        .replace("&nbsp;", " ")
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn folding_removes_case_and_accents() {
        assert_eq!(fold("Café"), "cafe");
        assert_eq!(fold("ÉCOLE"), "ecole");
        assert_eq!(fold("Straße"), "straße");
    }

    #[test]
    fn stems_match_inflections() {
        let a = Analyzer::new(["en"]);
        let mut t = BTreeSet::new();
        a.terms("Running houses, the Café!", &mut t);
        assert!(t.contains("run") && t.contains("hous") && t.contains("cafe"));
        assert_eq!(
            a.query("houses"),
            vec![QueryWord::Exact(BTreeSet::from(["hous".to_string()]))]
        );
        assert_eq!(
            a.query("runn*"),
            vec![QueryWord::Prefix(BTreeSet::from(["runn".to_string()]))]
        );
        let de = Analyzer::new(["de", "en"]);
        let mut t = BTreeSet::new();
        de.terms("Häuser", &mut t);
        assert!(!t.is_empty());
        assert_eq!(
            Analyzer::new(["xx"]).stems("words"),
            BTreeSet::from(["words".into()])
        );
    }

    #[test]
    fn tags_are_stripped() {
        assert_eq!(strip_tags("<p>a&amp;b</p>").trim(), "a&b");
    }
}
