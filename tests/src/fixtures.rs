//! Stored sites of earlier schema versions (`tests/fixtures/`), embedded so that every runner,
//! the browser's included, can open an upgraded copy of one.

use serde_json::Value;

/// Key/value pairs of a stored site.
pub type Pairs = Vec<(Vec<u8>, Vec<u8>)>;

/// `fresh-site.json`: a freshly created schema-1 site (admin `admin` / `secret`, entropy seed 7).
pub const SCHEMA_V1_FRESH_SITE: &str = include_str!("../fixtures/schema-v1/fresh-site.json");

/// `content-site.json`: a schema-1 site with content (see `tests/fixtures/schema-v1/README.md`).
pub const SCHEMA_V1_CONTENT_SITE: &str = include_str!("../fixtures/schema-v1/content-site.json");

/// The key/value pairs of a fixture (`{"schema": N, "pairs": [{"k": <hex>, "v": <text>}]}`), in
/// the order stored; an `Err` says what is malformed.
pub fn pairs(text: &str) -> Result<Pairs, String> {
    let doc: Value = serde_json::from_str(text).map_err(|e| format!("fixture: {e}"))?;
    let rows = doc["pairs"]
        .as_array()
        .ok_or("fixture: no \"pairs\" array")?;
    rows.iter()
        .map(|row| {
            let hex = row["k"].as_str().ok_or("fixture: a pair without \"k\"")?;
            let value = row["v"].as_str().ok_or("fixture: a pair without \"v\"")?;
            Ok((decode_hex(hex)?, value.as_bytes().to_vec()))
        })
        .collect()
}

fn decode_hex(hex: &str) -> Result<Vec<u8>, String> {
    if !hex.len().is_multiple_of(2) {
        return Err(format!("fixture: odd-length hex key {hex:?}"));
    }
    (0..hex.len())
        .step_by(2)
        .map(|i| {
            hex.get(i..i + 2)
                .and_then(|b| u8::from_str_radix(b, 16).ok())
                .ok_or_else(|| format!("fixture: bad hex key {hex:?}"))
        })
        .collect()
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn both_fixtures_decode_to_schema_1_sites() {
        for text in [SCHEMA_V1_FRESH_SITE, SCHEMA_V1_CONTENT_SITE] {
            let pairs = pairs(text).expect("decodes");
            let schema = pairs.iter().find(|(k, _)| k.as_slice() == b"s:schema");
            assert_eq!(schema.map(|(_, v)| v.as_slice()), Some(&b"1"[..]));
        }
    }

    #[test]
    fn malformed_fixtures_are_errors() {
        assert!(pairs("{}").is_err());
        assert!(pairs(r#"{"pairs": [{"k": "7", "v": ""}]}"#).is_err());
        assert!(pairs(r#"{"pairs": [{"k": "zz", "v": ""}]}"#).is_err());
    }
}
