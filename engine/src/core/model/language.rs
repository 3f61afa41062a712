//! Language codes the service knows, with their titles (the `{token, title}` of `language`).

use serde_json::{json, Value};

const LANGUAGES: &[(&str, &str)] = &[
    ("ar", "Arabic"),
    ("bg", "Bulgarian"),
    ("ca", "Catalan"),
    ("cs", "Czech"),
    ("da", "Danish"),
    ("de", "Deutsch"),
    ("el", "Greek"),
    ("en", "English"),
    ("es", "Español"),
    ("et", "Estonian"),
    ("eu", "Basque"),
    ("fi", "Finnish"),
    ("fr", "Français"),
    ("ga", "Irish"),
    ("he", "Hebrew"),
    ("hr", "Croatian"),
    ("hu", "Hungarian"),
    ("it", "Italiano"),
    ("ja", "Japanese"),
    ("ko", "Korean"),
    ("lt", "Lithuanian"),
    ("lv", "Latvian"),
    ("nl", "Nederlands"),
    ("no", "Norwegian"),
    ("pl", "Polski"),
    ("pt", "Português"),
    ("pt-br", "Português (Brasil)"),
    ("ro", "Romanian"),
    ("ru", "Russian"),
    ("sk", "Slovak"),
    ("sl", "Slovenian"),
    ("sv", "Svenska"),
    ("tr", "Turkish"),
    ("uk", "Ukrainian"),
    ("zh", "Chinese"),
];

/// Every language code the service knows, with its title, by code.
pub fn all() -> &'static [(&'static str, &'static str)] {
    LANGUAGES
}

/// The title of language `code`, if known.
pub fn title(code: &str) -> Option<&'static str> {
    LANGUAGES
        .iter()
        .find(|(c, _)| c.eq_ignore_ascii_case(code))
        .map(|(_, t)| *t)
}

/// `{token, title}` for `code` (title falls back to the code itself).
pub fn token_title(code: &str) -> Value {
    json!({"token": code, "title": title(code).unwrap_or(code)})
}
