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
    #[cfg(test)]
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
    #[cfg(test)]
    pub fn query(&self, text: &str) -> Vec<QueryWord> {
        let mut out = Vec::new();
        for chunk in text.split_whitespace() {
            self.chunk_words(chunk, &mut out);
        }
        out
    }

    /// The query words of one whitespace-free chunk of a query: its Unicode words, the last
    /// one a prefix when the chunk ends with `*`.
    pub fn chunk_words(&self, chunk: &str, out: &mut Vec<QueryWord>) {
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

    /// The terms of each word of `text` in order, one set per word (empty for a word the index
    /// skips, so that the words around it are not taken as adjacent): what a phrase is checked
    /// against.
    pub fn positions(&self, text: &str) -> Vec<BTreeSet<String>> {
        text.unicode_words()
            .map(|w| {
                let f = fold(w);
                if f.is_empty() || f.len() > MAX_TERM_LEN {
                    BTreeSet::new()
                } else {
                    self.stems(&f)
                }
            })
            .collect()
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

impl QueryWord {
    /// Whether a word indexed under `terms` is this query word.
    pub fn matches(&self, terms: &BTreeSet<String>) -> bool {
        match self {
            QueryWord::Exact(alts) => alts.iter().any(|a| terms.contains(a)),
            QueryWord::Prefix(ps) => ps
                .iter()
                .any(|p| terms.iter().any(|t| t.starts_with(p.as_str()))),
        }
    }
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

/// The text a reader sees in an HTML fragment, for indexing: tags removed, character references
/// decoded once (every HTML5 named reference, decimal and hexadecimal ones), the contents of
/// `script`, `style` and the other elements whose text is never shown dropped, comments,
/// doctypes and processing instructions dropped. Block-level tags and `br` separate words (a
/// space); inline ones (`b`, `em`, `span`, ...) do not, so `H<sub>2</sub>O` stays one word.
///
/// It is a tokenizer after the WHATWG HTML one, without tree building: quoted attribute values
/// may hold `>`; `title` and `textarea` hold text but no tags; `<![CDATA[...]]>` sections give
/// their text as it is (no reference decoded in them); a `<` that does not start a tag is text;
/// an unclosed tag or comment at the end is dropped.
pub fn strip_tags(html: &str) -> String {
    let mut out = String::with_capacity(html.len());
    let bytes = html.as_bytes();
    let mut i = 0;
    // the start of the text run not yet written (decoded when a tag or the end is reached)
    let mut text_from = 0;
    while let Some(off) = html[i..].find('<') {
        let lt = i + off;
        let Some((end, tag)) = markup_at(html, lt) else {
            i = lt + 1; // a `<` that starts no markup is text
            continue;
        };
        out.push_str(&htmlize::unescape(&html[text_from..lt]));
        i = end;
        match tag {
            Markup::Ignored => {}
            Markup::Cdata(text) => out.push_str(text),
            Markup::Tag { name, closing } => {
                if !is_inline(&name) {
                    out.push(' ');
                }
                if !closing {
                    if let Some(kind) = raw_text_kind(&name) {
                        // everything up to the matching end tag is text (or hidden)
                        let close = find_end_tag(bytes, i, &name);
                        if kind == RawText::Shown {
                            out.push_str(&htmlize::unescape(&html[i..close]));
                        }
                        i = close;
                    }
                }
            }
        }
        text_from = i;
    }
    out.push_str(&htmlize::unescape(&html[text_from..]));
    out
}

/// What a `<` starts.
enum Markup<'a> {
    /// A start or end tag, its name in lower case.
    Tag { name: String, closing: bool },
    /// A comment, doctype, processing instruction or bogus comment.
    Ignored,
    /// The text of a CDATA section.
    Cdata(&'a str),
}

/// The markup starting at `html[lt] == '<'` and the index after it; `None` when that `<` is
/// text (not followed by a letter, `/`, `!` or `?`).
fn markup_at(html: &str, lt: usize) -> Option<(usize, Markup<'_>)> {
    let bytes = html.as_bytes();
    let rest = &html[lt + 1..];
    let next = *rest.as_bytes().first()?;
    if next == b'!' {
        if let Some(body) = rest.strip_prefix("!--") {
            // `<!-->` and `<!--->` end at once; otherwise at `-->` (or the end)
            let end = if body.starts_with('>') {
                lt + 5
            } else if body.starts_with("->") {
                lt + 6
            } else {
                body.find("-->").map_or(html.len(), |e| lt + 4 + e + 3)
            };
            return Some((end, Markup::Ignored));
        }
        if let Some(body) = rest.strip_prefix("![CDATA[") {
            let start = lt + 9;
            return Some(match body.find("]]>") {
                Some(e) => (start + e + 3, Markup::Cdata(&html[start..start + e])),
                None => (html.len(), Markup::Cdata(&html[start..])),
            });
        }
        return Some((bogus_comment_end(bytes, lt + 2), Markup::Ignored));
    }
    if next == b'?' {
        return Some((bogus_comment_end(bytes, lt + 2), Markup::Ignored));
    }
    let (closing, name_at) = if next == b'/' {
        match rest.as_bytes().get(1) {
            Some(b) if b.is_ascii_alphabetic() => (true, lt + 2),
            Some(b'>') => return Some((lt + 3, Markup::Ignored)),
            Some(_) => return Some((bogus_comment_end(bytes, lt + 2), Markup::Ignored)),
            None => return None,
        }
    } else if next.is_ascii_alphabetic() {
        (false, lt + 1)
    } else {
        return None;
    };
    let name_end = bytes[name_at..]
        .iter()
        .position(|b| b.is_ascii_whitespace() || *b == b'/' || *b == b'>')
        .map_or(bytes.len(), |p| name_at + p);
    let name = html[name_at..name_end].to_ascii_lowercase();
    // attributes: a quoted value may hold `>`
    let mut j = name_end;
    let mut quote: Option<u8> = None;
    let mut after_eq = false;
    while j < bytes.len() {
        let b = bytes[j];
        match quote {
            Some(q) => {
                if b == q {
                    quote = None;
                }
            }
            None => match b {
                b'>' => return Some((j + 1, Markup::Tag { name, closing })),
                b'"' | b'\'' if after_eq => quote = Some(b),
                _ => {}
            },
        }
        if quote.is_none() && !b.is_ascii_whitespace() {
            after_eq = b == b'=';
        }
        j += 1;
    }
    // a tag cut off by the end of the fragment is dropped with what follows it
    Some((bytes.len(), Markup::Ignored))
}

/// The index after the `>` ending a bogus comment (or doctype, or processing instruction) whose
/// body starts at `from`.
fn bogus_comment_end(bytes: &[u8], from: usize) -> usize {
    bytes[from..]
        .iter()
        .position(|b| *b == b'>')
        .map_or(bytes.len(), |p| from + p + 1)
}

/// Whether the text of a raw-text element is shown.
#[derive(PartialEq, Eq)]
enum RawText {
    /// Text a reader sees (`title`, `textarea`, `xmp`).
    Shown,
    /// Code or markup that is never shown as text (`script`, `style`, ...).
    Hidden,
}

/// The elements whose content is text up to their end tag, not markup.
fn raw_text_kind(name: &str) -> Option<RawText> {
    match name {
        "script" | "style" | "iframe" | "noembed" | "noframes" | "noscript" | "template" => {
            Some(RawText::Hidden)
        }
        "title" | "textarea" | "xmp" => Some(RawText::Shown),
        _ => None,
    }
}

/// The index of `</name` (any case) followed by whitespace, `/` or `>` at or after `from`, or
/// the end of `bytes`.
fn find_end_tag(bytes: &[u8], from: usize, name: &str) -> usize {
    let n = name.len();
    let mut j = from;
    while j + 2 + n <= bytes.len() {
        if bytes[j] == b'<'
            && bytes[j + 1] == b'/'
            && bytes[j + 2..j + 2 + n].eq_ignore_ascii_case(name.as_bytes())
            && bytes
                .get(j + 2 + n)
                .is_none_or(|b| b.is_ascii_whitespace() || *b == b'/' || *b == b'>')
        {
            return j;
        }
        j += 1;
    }
    bytes.len()
}

/// Phrasing elements that do not separate words.
fn is_inline(name: &str) -> bool {
    matches!(
        name,
        "a" | "abbr"
            | "b"
            | "bdi"
            | "bdo"
            | "cite"
            | "code"
            | "data"
            | "dfn"
            | "em"
            | "font"
            | "i"
            | "kbd"
            | "mark"
            | "q"
            | "s"
            | "samp"
            | "small"
            | "span"
            | "strike"
            | "strong"
            | "sub"
            | "sup"
            | "time"
            | "u"
            | "var"
    )
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
        assert_eq!(
            strip_tags("<p>one</p><p>two<br>three</p>"),
            " one  two three "
        );
        assert_eq!(strip_tags("H<sub>2</sub>O <b>bold</B>"), "H2O bold");
        assert_eq!(strip_tags("<P CLASS=x>a</P>"), " a ");
    }

    #[test]
    fn entities_are_decoded_once() {
        // named (also HTML5-only names and the legacy ones without `;`), decimal, hexadecimal
        assert_eq!(
            strip_tags("caf&eacute; &hellip; &NewLine;&copy 2026"),
            "café … \n© 2026"
        );
        assert_eq!(
            strip_tags("&#233;&#x E9;&#xe9;&#XE9;&#128512;"),
            "é&#x E9;éé😀"
        );
        // double-escaped text shows the escape, it is not decoded twice
        assert_eq!(strip_tags("&amp;lt;p&amp;gt;"), "&lt;p&gt;");
        assert_eq!(strip_tags("&amp;amp;"), "&amp;");
        // escaped markup is text, not a tag
        assert_eq!(
            strip_tags("&lt;script&gt;x&lt;/script&gt;"),
            "<script>x</script>"
        );
        // unknown names and bare ampersands stay as they are
        assert_eq!(strip_tags("AT&T &bogus; a & b"), "AT&T &bogus; a & b");
        // numbers that are no character become U+FFFD
        assert_eq!(strip_tags("&#0;&#xD800;"), "\u{FFFD}\u{FFFD}");
    }

    #[test]
    fn scripts_and_styles_are_not_text() {
        assert_eq!(
            strip_tags("a<script>var s = \"</p>\"; if (a<b) x();</script>b"),
            "a  b"
        );
        assert_eq!(
            strip_tags("a<STYLE type=text/css>p { color: red }</style >b"),
            "a  b"
        );
        // the end tag must be the element's own: `</scripts>` does not close it
        assert_eq!(strip_tags("<script>x</scripts>y</script>z"), "  z");
        assert_eq!(
            strip_tags("<noscript>n</noscript><template><p>t</p></template>"),
            "    "
        );
        // an unclosed script hides the rest
        assert_eq!(strip_tags("a<script>secret"), "a ");
        // title and textarea keep their text, tags in them are text
        assert_eq!(
            strip_tags("<textarea><b>&amp;</b></textarea>"),
            " <b>&</b> "
        );
    }

    #[test]
    fn comments_doctypes_and_cdata() {
        assert_eq!(strip_tags("a<!-- <p>hidden</p> -->b"), "ab");
        assert_eq!(strip_tags("a<!-->b<!--->c"), "abc");
        assert_eq!(strip_tags("a<!-- never closed"), "a");
        assert_eq!(
            strip_tags("<!DOCTYPE html><?xml version=\"1.0\"?>a</>b"),
            "ab"
        );
        assert_eq!(strip_tags("a<![CDATA[x < y &amp; z]]>b"), "ax < y &amp; zb");
    }

    #[test]
    fn attributes_may_hold_angle_brackets() {
        assert_eq!(
            strip_tags("<a title=\"1 > 0\" href='x>y'>link</a> after"),
            "link after"
        );
        assert_eq!(strip_tags("<img alt=\"a>b\">c"), " c");
        // an unquoted value ends at `>`
        assert_eq!(strip_tags("<p class=a>b</p>"), " b ");
        // a quote inside a name or an unquoted value is no quote
        assert_eq!(strip_tags("<p data-x=a\"b>c</p>"), " c ");
        // a tag cut off by the end is dropped
        assert_eq!(strip_tags("a<p title=\"x"), "a");
    }

    #[test]
    fn a_lone_less_than_is_text() {
        assert_eq!(
            strip_tags("1 < 2 and 3 <4 and a<=b"),
            "1 < 2 and 3 <4 and a<=b"
        );
        assert_eq!(strip_tags("x </ y"), "x ");
    }
}
