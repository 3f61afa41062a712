//! `@replace`: site-wide find and replace (the rules are in [`crate::content::replace`]).

use schemars::JsonSchema;
use serde::{Deserialize, Serialize};

use super::extract::Call;
use super::router::{Registry, RouteDef};
use crate::content::replace::{self, Rule};
use crate::core::error::Result;
use crate::core::http::Response;
use crate::core::model::ContentRecord;
use crate::core::security::Permission;
use crate::people::permissions::Access;
use crate::runtime::context::Ctx;

/// Register the replace route.
pub fn register(r: &mut Registry) {
    r.route(
        RouteDef::post("@replace", post)
            .checked_by_handler()
            .summary(
                "Replace `pattern` (plain text, or a regular expression with `regex: true`) by \
                 `replacement` in the titles, descriptions and slate text blocks of the context \
                 and everything below it (logged-in callers; objects the caller may not modify, \
                 or locked ones, are skipped and listed); `dry_run: true` only lists the changes",
            )
            .body::<ReplaceRequest>()
            .answers::<ReplaceAnswer>(),
    );
}

/// A find-and-replace request.
#[derive(Deserialize, JsonSchema)]
#[serde(deny_unknown_fields)]
pub struct ReplaceRequest {
    /// The text to find, or a regular expression (`regex: true`; the `regex` crate's syntax).
    pub pattern: String,
    /// What replaces each match (with `regex: true`, `$1` and `${name}` name groups).
    pub replacement: String,
    /// Whether `pattern` is a regular expression (default: plain text).
    #[serde(default)]
    pub regex: bool,
    /// Match without regard to case (default: false).
    #[serde(default)]
    pub ignore_case: bool,
    /// Only list what would change (default: false).
    #[serde(default)]
    pub dry_run: bool,
}

/// What was (or would be) changed.
#[derive(Serialize, JsonSchema)]
pub struct ReplaceAnswer {
    /// This endpoint's URL.
    #[serde(rename = "@id")]
    pub id: String,
    /// The objects changed (or, in a dry run, that would be), in tree order.
    pub changes: Vec<ChangeEntry>,
    /// Whether this was a dry run (nothing was saved).
    pub dry_run: bool,
    /// How many objects changed.
    pub items_total: usize,
    /// The objects that matched but were left alone: the caller may not modify them
    /// (`Unauthorized`) or they are locked (`Locked`).
    pub skipped: Vec<SkippedEntry>,
}

/// One changed object.
#[derive(Serialize, JsonSchema)]
pub struct ChangeEntry {
    /// Its title before.
    pub title: String,
    /// Its title after.
    pub new_title: String,
    /// Its path.
    pub path: String,
    /// The fields changed (`title`, `description`, `blocks`).
    pub fields: Vec<String>,
}

/// One object left alone.
#[derive(Serialize, JsonSchema)]
pub struct SkippedEntry {
    /// Its title.
    pub title: String,
    /// Its path.
    pub path: String,
    /// `Unauthorized` or `Locked`.
    pub reason: String,
}

fn display(path: &str) -> String {
    if path.is_empty() {
        "/".into()
    } else {
        path.to_string()
    }
}

fn post(ctx: &mut Ctx<'_>, call: &Call<'_>, obj: ContentRecord) -> Result<Response> {
    if ctx.principal.is_anonymous() {
        return Err(ctx.denied(Permission::Modify));
    }
    ctx.require(Permission::View, &obj)?;
    let body: ReplaceRequest = call.body()?;
    let rule = Rule::new(
        &body.pattern,
        &body.replacement,
        body.regex,
        body.ignore_case,
    )?;
    let note = format!("Replaced '{}' with '{}'", body.pattern, body.replacement);
    let outcome = replace::run(ctx, &obj, &rule, body.dry_run, &note)?;
    let changes: Vec<ChangeEntry> = outcome
        .changes
        .into_iter()
        .map(|c| ChangeEntry {
            title: c.title,
            new_title: c.new_title,
            path: display(&c.path),
            fields: c.fields,
        })
        .collect();
    Ok(Response::json(
        200,
        &ReplaceAnswer {
            id: ctx.url(&format!("{}/@replace", obj.path)),
            items_total: changes.len(),
            changes,
            dry_run: body.dry_run,
            skipped: outcome
                .skipped
                .into_iter()
                .map(|s| SkippedEntry {
                    title: s.title,
                    path: display(&s.path),
                    reason: s.reason.to_string(),
                })
                .collect(),
        },
    ))
}
