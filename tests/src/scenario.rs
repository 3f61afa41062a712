//! The scenario file format (see `tests/README.md` for the documentation with examples).

use std::collections::BTreeMap;

use serde::Deserialize;
use serde_json::Value;

/// One contract scenario: a named, ordered list of request/expectation steps run against a fresh site.
#[derive(Debug, Clone, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct Scenario {
    /// The scenario's name; must equal the file stem.
    pub name: String,
    /// What situation the scenario pins, and why.
    pub description: String,
    /// Profiles the fresh site is created with (`["nick"]` for Nick's answers); none: a
    /// default (Plone) site.
    #[serde(default)]
    pub profiles: Vec<String>,
    /// The steps, run in order; the first failing step ends the scenario.
    pub steps: Vec<Step>,
}

impl Scenario {
    /// Parse a scenario from its JSON text.
    pub fn parse(text: &str) -> Result<Self, String> {
        serde_json::from_str(text).map_err(|e| format!("invalid scenario JSON: {e}"))
    }
}

/// One request and what its response must look like.
#[derive(Debug, Clone, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct Step {
    /// A short label shown in failure messages (optional).
    #[serde(default)]
    pub name: Option<String>,
    /// The request to send.
    pub request: RequestSpec,
    /// What the response must be.
    pub expect: Expect,
}

/// The request of a step.
#[derive(Debug, Clone, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct RequestSpec {
    /// HTTP method (`GET`, `POST`, ...).
    pub method: String,
    /// Path below the base URL, including any query string (`/folder?b_size=2`). `{{var:NAME}}` is
    /// substituted.
    pub path: String,
    /// Credentials shorthand: `anonymous` (default), `admin`, `basic:<login>:<password>`,
    /// `bearer:<var>`.
    #[serde(default)]
    pub auth: Option<String>,
    /// Extra headers. `Accept: application/json` is sent unless given here; a `json` or `raw` body
    /// adds `Content-Type: application/json` unless given here. `{{var:NAME}}` and `{base}` are
    /// substituted in values.
    #[serde(default)]
    pub headers: BTreeMap<String, String>,
    /// A JSON body (`{{var:NAME}}` and `{base}` substituted in strings).
    #[serde(default)]
    pub json: Option<Value>,
    /// A raw body, sent byte for byte (after `{{var:NAME}}` substitution).
    #[serde(default)]
    pub raw: Option<String>,
    /// A generated body of this many bytes (`x` repeated), for size limits.
    #[serde(default)]
    pub bytes: Option<usize>,
    /// A binary body, given as base64 (file uploads: tus `PATCH`).
    #[serde(default)]
    pub base64: Option<String>,
}

/// How the body of a response is compared.
#[derive(Debug, Clone, Copy, Default, PartialEq, Eq, Deserialize)]
#[serde(rename_all = "snake_case")]
pub enum MatchMode {
    /// Every key present, no extra keys, arrays of the same length (the default).
    #[default]
    Exact,
    /// Objects may have keys the expectation does not name (at every depth); arrays still have the
    /// same length.
    Subset,
}

/// The expectations of a step.
#[derive(Debug, Clone, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct Expect {
    /// The status code.
    pub status: u16,
    /// Headers that must be present with a matching value (a string pattern), or absent (`null`).
    /// Names are case-insensitive. Headers not named here are not checked.
    #[serde(default)]
    pub headers: BTreeMap<String, Option<String>>,
    /// The body must be JSON matching this pattern.
    #[serde(default)]
    pub json: Option<Value>,
    /// The body must be exactly this text.
    #[serde(default)]
    pub raw: Option<String>,
    /// The body must be exactly these bytes, given as base64 (downloads).
    #[serde(default)]
    pub base64: Option<String>,
    /// The body must be this many bytes, whatever they are.
    #[serde(default)]
    pub size: Option<usize>,
    /// The body must be an image (JPEG, PNG, GIF, WebP) of `[width, height]` pixels: image
    /// scales, whose bytes depend on the encoder.
    #[serde(default)]
    pub image: Option<[u32; 2]>,
    /// How `json` is compared (default `exact`).
    #[serde(default, rename = "match")]
    pub mode: MatchMode,
}
