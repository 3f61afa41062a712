//! Query-string parsing (`a=1&b=x+y&metadata_fields=UID&metadata_fields=Creator`).

use percent_encoding::{utf8_percent_encode, AsciiSet, NON_ALPHANUMERIC};

use crate::core::error::{EngineError, Result};

/// The decoded parameters of a query string, in order (repeated names kept).
#[derive(Debug, Clone, Default, PartialEq, Eq)]
pub struct Query {
    /// Name/value pairs.
    pub pairs: Vec<(String, String)>,
}

impl Query {
    /// Parse a raw query string; undecodable escapes are a 400.
    pub fn parse(raw: &str) -> Result<Self> {
        let mut pairs = Vec::new();
        for part in raw.split('&').filter(|p| !p.is_empty()) {
            let (k, v) = part.split_once('=').unwrap_or((part, ""));
            pairs.push((decode_component(k, true)?, decode_component(v, true)?));
        }
        Ok(Query { pairs })
    }

    /// The first value of `name`.
    pub fn get(&self, name: &str) -> Option<&str> {
        self.pairs
            .iter()
            .find(|(k, _)| k == name)
            .map(|(_, v)| v.as_str())
    }

    /// Every value of `name` (also `name:list`, as Zope clients send).
    pub fn all(&self, name: &str) -> Vec<&str> {
        let list = format!("{name}:list");
        self.pairs
            .iter()
            .filter(|(k, _)| k == name || *k == list)
            .flat_map(|(_, v)| v.split(','))
            .filter(|v| !v.is_empty())
            .collect()
    }
}

/// Percent-decode one URL component (`plus_is_space` for query strings); invalid escapes or UTF-8
/// are a 400. (Written out rather than `percent_encoding::percent_decode`, which passes a
/// malformed escape through as text: a client's `%zz` should be refused, not guessed at.)
pub fn decode_component(s: &str, plus_is_space: bool) -> Result<String> {
    let bytes = s.as_bytes();
    let mut out = Vec::with_capacity(bytes.len());
    let mut i = 0;
    while i < bytes.len() {
        match bytes[i] {
            b'%' => {
                let hex = bytes
                    .get(i + 1..i + 3)
                    .and_then(|h| std::str::from_utf8(h).ok())
                    .and_then(|h| u8::from_str_radix(h, 16).ok())
                    .ok_or_else(|| {
                        EngineError::bad_request(format!("Malformed percent-escape in '{s}'"))
                    })?;
                out.push(hex);
                i += 3;
            }
            b'+' if plus_is_space => {
                out.push(b' ');
                i += 1;
            }
            b => {
                out.push(b);
                i += 1;
            }
        }
    }
    String::from_utf8(out)
        .map_err(|_| EngineError::bad_request(format!("'{s}' is not valid UTF-8")))
}

/// Bytes a query component keeps as they are: RFC 3986's unreserved characters.
const COMPONENT: &AsciiSet = &NON_ALPHANUMERIC
    .remove(b'-')
    .remove(b'_')
    .remove(b'.')
    .remove(b'~');

/// Percent-encode a query component.
pub fn encode_component(s: &str) -> String {
    utf8_percent_encode(s, COMPONENT).to_string()
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn parses_repeated_and_encoded_values() {
        let q = Query::parse("a=1&m=UID&m=Creator&t=x+y%21&b_size=").unwrap();
        assert_eq!(q.get("a"), Some("1"));
        assert_eq!(q.all("m"), vec!["UID", "Creator"]);
        assert_eq!(q.get("t"), Some("x y!"));
        assert!(Query::parse("a=%zz").is_err());
        assert_eq!(encode_component("a b/é~-_.!"), "a%20b%2F%C3%A9~-_.%21");
    }
}
