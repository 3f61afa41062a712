//! Object ids: which ids are legal, and how an id is derived from a title.

use crate::core::error::{EngineError, Result};

/// Longest id accepted or generated.
pub const MAX_ID_LEN: usize = 100;

/// Ids that would shadow API paths or be ambiguous in URLs.
const RESERVED: &[&str] = &["root", "++api++", "view", "edit", "index_html"];

/// Check a client-supplied id; the error says what is wrong with it.
pub fn validate_id(id: &str) -> Result<()> {
    let bad = |why: &str| {
        Err(EngineError::bad_request(format!(
            "Invalid id '{id}': {why}"
        )))
    };
    if id.is_empty() {
        return bad("it must not be empty");
    }
    if id.len() > MAX_ID_LEN {
        return bad(&format!("it is longer than {MAX_ID_LEN} characters"));
    }
    if id.contains('/') {
        return bad("it must not contain '/'");
    }
    if let Some(c) = id
        .chars()
        .find(|c| !(c.is_ascii_alphanumeric() || matches!(c, '-' | '_' | '.' | '~')))
    {
        return bad(&format!(
            "character '{c}' is not allowed (use letters, digits, '-', '_', '.', '~')"
        ));
    }
    if id.starts_with(['@', '_', '.', '+', '~']) {
        return bad("it must not start with '@', '_', '.', '+' or '~'");
    }
    if RESERVED.contains(&id) {
        return bad("it is reserved");
    }
    Ok(())
}

/// Derive an id from a title: lowercase ASCII letters and digits separated by single dashes. A
/// file name's extension stays (`Harbour map.PNG` becomes `harbour-map.png`), as Plone keeps it.
pub fn normalize(title: &str) -> String {
    let title = title.trim();
    if let Some((base, ext)) = title.rsplit_once('.') {
        let is_ext = (1..=5).contains(&ext.len()) && ext.chars().all(|c| c.is_ascii_alphanumeric());
        let base = normalize_words(base);
        if is_ext && !base.is_empty() {
            let id = format!("{base}.{}", ext.to_ascii_lowercase());
            if validate_id(&id).is_ok() {
                return id;
            }
        }
    }
    let out = normalize_words(title);
    if out.is_empty() || validate_id(&out).is_err() {
        if out.is_empty() {
            "item".to_string()
        } else {
            format!("{out}-1")
        }
    } else {
        out
    }
}

/// Lowercase ASCII letters and digits of `title`, runs of anything else as single dashes.
fn normalize_words(title: &str) -> String {
    let mut out = String::new();
    let mut dash = false;
    for c in title.chars().flat_map(fold_char) {
        if c.is_ascii_alphanumeric() {
            if dash && !out.is_empty() {
                out.push('-');
            }
            dash = false;
            out.push(c.to_ascii_lowercase());
        } else {
            dash = true;
        }
        if out.len() >= 50 {
            break;
        }
    }
    out.trim_end_matches('-').to_string()
}

/// Fold common accented Latin letters to ASCII so `Über Straße` becomes `uber-strasse`.
fn fold_char(c: char) -> Vec<char> {
    let s: &str = match c {
        'à' | 'á' | 'â' | 'ã' | 'å' | 'ā' | 'À' | 'Á' | 'Â' | 'Ã' | 'Å' => "a",
        'ä' | 'Ä' | 'æ' | 'Æ' => "ae",
        'ç' | 'Ç' | 'č' | 'Č' => "c",
        'è' | 'é' | 'ê' | 'ë' | 'ē' | 'È' | 'É' | 'Ê' | 'Ë' => "e",
        'ì' | 'í' | 'î' | 'ï' | 'Ì' | 'Í' | 'Î' | 'Ï' => "i",
        'ñ' | 'Ñ' => "n",
        'ò' | 'ó' | 'ô' | 'õ' | 'ø' | 'Ò' | 'Ó' | 'Ô' | 'Õ' | 'Ø' => "o",
        'ö' | 'Ö' | 'œ' | 'Œ' => "oe",
        'ù' | 'ú' | 'û' | 'Ù' | 'Ú' | 'Û' => "u",
        'ü' | 'Ü' => "ue",
        'ß' => "ss",
        'ý' | 'ÿ' | 'Ý' => "y",
        'š' | 'Š' => "s",
        'ž' | 'Ž' => "z",
        _ => return vec![c],
    };
    s.chars().collect()
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn titles_normalize_to_ids() {
        assert_eq!(normalize("My Document"), "my-document");
        assert_eq!(normalize("  Über die Straße!  "), "ueber-die-strasse");
        assert_eq!(normalize("???"), "item");
        assert_eq!(normalize("Harbour map.PNG"), "harbour-map.png");
        assert_eq!(normalize("Version 2.0"), "version-2.0");
        assert_eq!(normalize(".png"), "png");
        assert_eq!(normalize("Ends with a dot."), "ends-with-a-dot");
        assert_eq!(normalize("Root"), "root-1");
    }

    #[test]
    fn illegal_ids_are_rejected() {
        for bad in [
            "", "a/b", "@search", "_private", "a b", "root", "++api++", "ä",
        ] {
            assert!(validate_id(bad).is_err(), "{bad:?} should be rejected");
        }
        for good in ["doc-1", "A_b.c", "x~y", "123"] {
            assert!(validate_id(good).is_ok(), "{good:?} should be accepted");
        }
    }
}
