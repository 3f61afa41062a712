//! The syntax of full-text queries (`SearchableText`, `Title`, `Description`), as Plone's
//! ZCTextIndex reads them:
//!
//! ```text
//! query    = or
//! or       = and ("OR" and)*
//! and      = term ("AND" not)*
//! not      = ["NOT"] term
//! term     = "(" or ")" | atom+
//! ```
//!
//! Words side by side must all match (an implied AND; a group is joined to what follows it by
//! an explicit `AND` or `OR`, as in ZCTextIndex); `AND`, `OR` and `NOT` are operators in
//! any case (`or` too, as in ZCTextIndex); parentheses group. An atom is a run of characters
//! without white space, parentheses or double quotes, or a `"quoted phrase"`; a leading `-`
//! negates it (`foo -bar`). An atom of several words (`"harbour lights"`, `e-mail`) is a
//! phrase: its words adjacent and in order. A word ending in `*` is a prefix (also inside a
//! phrase, where it stands for one word). A double quote without its closing one is ignored.
//!
//! A query that does not parse (unbalanced parentheses, an operator where a word must be, a
//! group of negated words only, nesting deeper than [`MAX_DEPTH`]) is `Err`: the search then
//! answers no results, as Plone's search does on a `ParseError`.

use std::collections::BTreeSet;

use super::text::{Analyzer, QueryWord};

/// Deepest nesting of parentheses a query may have.
pub const MAX_DEPTH: usize = 32;

/// A parsed full-text query.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum TextQuery {
    /// One word (or prefix).
    Word(QueryWord),
    /// Words adjacent and in this order.
    Phrase(Vec<QueryWord>),
    /// Every one of `all` and none of `none` (`all` is never empty).
    And {
        /// What must match.
        all: Vec<TextQuery>,
        /// What must not match.
        none: Vec<TextQuery>,
    },
    /// Any of these.
    Or(Vec<TextQuery>),
}

/// Why a query does not parse.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct SyntaxError(pub &'static str);

/// One token of a query.
#[derive(Debug, Clone, PartialEq, Eq)]
enum Token<'a> {
    And,
    Or,
    Not,
    Open,
    Close,
    /// A run of characters (without its quotes when quoted), negated by a leading `-`.
    Atom {
        text: &'a str,
        quoted: bool,
        negated: bool,
    },
}

/// Split a query into tokens (ZCTextIndex's lexical rules).
fn tokens(q: &str) -> Vec<Token<'_>> {
    let stop = |c: char| c.is_whitespace() || c == '(' || c == ')' || c == '"';
    let mut out = Vec::new();
    let mut i = 0;
    while let Some(c) = q[i..].chars().next() {
        if c.is_whitespace() {
            i += c.len_utf8();
            continue;
        }
        if c == '(' || c == ')' {
            out.push(if c == '(' { Token::Open } else { Token::Close });
            i += 1;
            continue;
        }
        let negated = c == '-';
        let body = if negated { i + 1 } else { i };
        if q[body..].starts_with('"') {
            if let Some(len) = q[body + 1..].find('"') {
                out.push(Token::Atom {
                    text: &q[body + 1..body + 1 + len],
                    quoted: true,
                    negated,
                });
                i = body + 1 + len + 1;
                continue;
            }
            if !negated {
                // a quote never closed: skipped
                i += 1;
                continue;
            }
        }
        // a run up to white space, a parenthesis or a quote (a lone `-` is a run of its own)
        let len = q[i..]
            .char_indices()
            .skip(1)
            .find(|(_, c)| stop(*c))
            .map_or(q.len() - i, |(p, _)| p);
        let text = &q[i..i + len];
        out.push(match text.to_uppercase().as_str() {
            "AND" => Token::And,
            "OR" => Token::Or,
            "NOT" => Token::Not,
            _ => Token::Atom {
                text,
                quoted: false,
                negated,
            },
        });
        i += len;
    }
    out
}

/// Parse `query`: `Ok(None)` when it has no word to search (only punctuation, say).
pub fn parse(analyzer: &Analyzer, query: &str) -> Result<Option<TextQuery>, SyntaxError> {
    let tokens = tokens(query);
    if tokens.is_empty() {
        return Ok(None);
    }
    let mut p = Parser {
        analyzer,
        tokens,
        at: 0,
        depth: 0,
    };
    let tree = p.or()?;
    if p.at < p.tokens.len() {
        return Err(SyntaxError("unexpected operator or parenthesis"));
    }
    Ok(tree)
}

struct Parser<'a, 'q> {
    analyzer: &'a Analyzer,
    tokens: Vec<Token<'q>>,
    at: usize,
    depth: usize,
}

impl<'q> Parser<'_, 'q> {
    fn peek(&self) -> Option<&Token<'q>> {
        self.tokens.get(self.at)
    }

    fn eat(&mut self, t: &Token<'_>) -> bool {
        if self.peek() == Some(t) {
            self.at += 1;
            true
        } else {
            false
        }
    }

    fn or(&mut self) -> Result<Option<TextQuery>, SyntaxError> {
        let mut any = Vec::new();
        any.extend(self.and()?);
        while self.eat(&Token::Or) {
            any.extend(self.and()?);
        }
        Ok(match any.len() {
            0 => None,
            1 => any.pop(),
            _ => Some(TextQuery::Or(any)),
        })
    }

    fn and(&mut self) -> Result<Option<TextQuery>, SyntaxError> {
        let mut all = Vec::new();
        let mut none = Vec::new();
        if let Some(t) = self.term()? {
            push_all(&mut all, &mut none, t);
        }
        while self.eat(&Token::And) {
            let negated = self.eat(&Token::Not);
            if let Some(t) = self.term()? {
                if negated {
                    none.push(t);
                } else {
                    push_all(&mut all, &mut none, t);
                }
            }
        }
        if all.is_empty() {
            // only words without terms: nothing to search (what they exclude goes with them)
            return Ok(None);
        }
        Ok(Some(if all.len() == 1 && none.is_empty() {
            all.remove(0)
        } else {
            TextQuery::And { all, none }
        }))
    }

    fn term(&mut self) -> Result<Option<TextQuery>, SyntaxError> {
        if self.eat(&Token::Open) {
            self.depth += 1;
            if self.depth > MAX_DEPTH {
                return Err(SyntaxError("parentheses nested too deep"));
            }
            let tree = self.or()?;
            if !self.eat(&Token::Close) {
                return Err(SyntaxError("a parenthesis is not closed"));
            }
            self.depth -= 1;
            return Ok(tree);
        }
        let mut all = Vec::new();
        let mut none = Vec::new();
        let mut atoms = 0;
        while let Some(Token::Atom {
            text,
            quoted,
            negated,
        }) = self.peek().cloned()
        {
            self.at += 1;
            atoms += 1;
            let mut words = Vec::new();
            if quoted {
                for chunk in text.split_whitespace() {
                    self.analyzer.chunk_words(chunk, &mut words);
                }
            } else {
                self.analyzer.chunk_words(text, &mut words);
            }
            let node = match words.len() {
                0 => continue,
                1 => TextQuery::Word(words.remove(0)),
                _ => TextQuery::Phrase(words),
            };
            if negated {
                none.push(node);
            } else {
                all.push(node);
            }
        }
        if atoms == 0 {
            return Err(SyntaxError("a word or a group is missing"));
        }
        if all.is_empty() {
            if none.is_empty() {
                return Ok(None);
            }
            return Err(SyntaxError("a term must have at least one positive word"));
        }
        Ok(Some(if all.len() == 1 && none.is_empty() {
            all.remove(0)
        } else {
            TextQuery::And { all, none }
        }))
    }
}

/// Add `t` to what an AND requires, its own parts when it is an AND itself.
fn push_all(all: &mut Vec<TextQuery>, none: &mut Vec<TextQuery>, t: TextQuery) {
    match t {
        TextQuery::And { all: a, none: n } => {
            all.extend(a);
            none.extend(n);
        }
        t => all.push(t),
    }
}

impl TextQuery {
    /// Whether a text whose words are indexed under `positions` (one term set per word, in
    /// order: [`Analyzer::positions`]) matches.
    pub fn matches(&self, positions: &[BTreeSet<String>]) -> bool {
        match self {
            TextQuery::Word(w) => positions.iter().any(|p| w.matches(p)),
            TextQuery::Phrase(ws) => phrase_at(ws, positions),
            TextQuery::And { all, none } => {
                all.iter().all(|q| q.matches(positions))
                    && !none.iter().any(|q| q.matches(positions))
            }
            TextQuery::Or(any) => any.iter().any(|q| q.matches(positions)),
        }
    }
}

/// Whether the words `ws` occur adjacent and in order in `positions`.
pub fn phrase_at(ws: &[QueryWord], positions: &[BTreeSet<String>]) -> bool {
    !ws.is_empty()
        && positions
            .windows(ws.len())
            .any(|win| ws.iter().zip(win).all(|(w, p)| w.matches(p)))
}

#[cfg(test)]
mod tests {
    use super::*;

    fn w(t: &str) -> TextQuery {
        TextQuery::Word(QueryWord::Exact(BTreeSet::from([t.to_string()])))
    }

    fn q(s: &str) -> Result<Option<TextQuery>, SyntaxError> {
        parse(&Analyzer::new([]), s)
    }

    fn hit(query: &str, text: &str) -> bool {
        let a = Analyzer::new(["en"]);
        parse(&a, query)
            .ok()
            .flatten()
            .is_some_and(|t| t.matches(&a.positions(text)))
    }

    #[test]
    fn words_operators_and_groups() {
        assert_eq!(
            q("a b").unwrap(),
            Some(TextQuery::And {
                all: vec![w("a"), w("b")],
                none: vec![]
            })
        );
        assert_eq!(
            q("a OR b").unwrap(),
            Some(TextQuery::Or(vec![w("a"), w("b")]))
        );
        assert_eq!(q("a or b").unwrap(), q("a OR b").unwrap(), "any case");
        assert_eq!(
            q("a AND NOT b").unwrap(),
            Some(TextQuery::And {
                all: vec![w("a")],
                none: vec![w("b")]
            })
        );
        assert_eq!(q("a -b").unwrap(), q("a AND NOT b").unwrap());
        assert_eq!(
            q("(a OR b) AND c").unwrap(),
            Some(TextQuery::And {
                all: vec![TextQuery::Or(vec![w("a"), w("b")]), w("c")],
                none: vec![]
            })
        );
        assert_eq!(q("((a))").unwrap(), Some(w("a")));
        assert_eq!(
            q("\"a b\" c").unwrap(),
            Some(TextQuery::And {
                all: vec![
                    TextQuery::Phrase(vec![
                        QueryWord::Exact(BTreeSet::from(["a".into()])),
                        QueryWord::Exact(BTreeSet::from(["b".into()])),
                    ]),
                    w("c")
                ],
                none: vec![]
            })
        );
        assert_eq!(q("!!! ?").unwrap(), None);
        assert_eq!(q("").unwrap(), None);
    }

    #[test]
    fn malformed_queries_are_errors() {
        for bad in [
            "(a",
            "a)",
            "OR a",
            "a OR",
            "NOT a",
            "a NOT b",
            "-a",
            "a AND",
            "()",
            "a (OR b)",
            // as in ZCTextIndex, only words side by side are ANDed implicitly, not groups
            "(a OR b) c",
            "c (a OR b)",
        ] {
            assert!(q(bad).is_err(), "{bad}");
        }
        assert!(q(&"(".repeat(100)).is_err());
        assert!(q(&format!("{}a{}", "(".repeat(10), ")".repeat(10))).is_ok());
        // an unclosed quote is ignored
        assert_eq!(q("\"a b").unwrap(), q("a b").unwrap());
    }

    #[test]
    fn phrases_need_adjacent_words_in_order() {
        assert!(hit("\"harbour lights\"", "the harbour lights shine"));
        assert!(!hit("\"harbour lights\"", "lights of the harbour"));
        assert!(!hit("\"harbour lights\"", "harbour, green lights"));
        assert!(hit("\"harbour light*\"", "harbour lighthouse"));
        assert!(hit("harbour-lights", "Harbour Lights"));
        assert!(hit("\"houses burning\"", "the house burns"));
        assert!(hit("cat OR dog", "a dog"));
        assert!(!hit("cat AND NOT dog", "a cat and a dog"));
        assert!(hit("cat -\"big dog\"", "a cat and a dog, not big"));
        assert!(!hit("cat -\"big dog\"", "a cat and a big dog"));
        assert!(hit("(cat OR dog) AND (red OR blue)", "blue dog"));
        assert!(!hit("(cat OR dog) AND (red OR blue)", "green dog"));
        assert!(hit("cat OR dog AND NOT (red OR blue)", "a cat"));
        assert!(!hit("cat AND dog OR red", "a cat"));
    }
}
