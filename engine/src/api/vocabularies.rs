//! `@vocabularies`: the vocabularies ([`crate::catalog::vocabularies`]) and their terms, on any object
//! (some depend on the context, such as the types addable there).
//!
//! | method | path | query | answer |
//! |---|---|---|---|
//! | GET | `<path>/@vocabularies` | | 200, `[{@id, title}]` |
//! | GET | `<path>/@vocabularies/<name>` | `title` (part of the title, any case), `token` (exact), `tokens` (repeatable), `b_start`, `b_size` | 200, `{@id, items: [{title, token}], items_total, batching?}` |
//!
//! Reading a vocabulary needs View on the context (the users vocabulary: Modify); an unknown one
//! is a 404; `title` together with `token` or `tokens` is a 400.
//!
//! On a Nick site the list holds Nick's names only and a vocabulary answers all its terms unless
//! `b_size` asks for a batch (the default site batches by 25).

use schemars::JsonSchema;
use serde::{Deserialize, Serialize};

use super::batching::{Batch, BatchLinks};
use super::extract::Call;
use super::router::{RouteDef, RouteTable};
use crate::catalog::vocabularies;
use crate::core::error::{EngineError, Result};
use crate::core::http::Response;
use crate::core::model::ContentRecord;
use crate::core::security::Permission;
use crate::people::permissions::Access;
use crate::runtime::context::Ctx;

/// Register `@vocabularies`.
pub fn register(r: &mut RouteTable) {
    r.route(
        RouteDef::get("@vocabularies/{name?}", get)
            .requires(Permission::View)
            .summary("The vocabularies, or one vocabulary's terms (filtered by title or tokens, batched)")
            .query::<TermQuery>()
            .answers::<Terms>(),
    );
}

// Some fields are accepted from clients or only describe the OpenAPI document; none is read.
#[allow(dead_code)]
/// The filters of a vocabulary's terms.
#[derive(Deserialize, JsonSchema)]
pub struct TermQuery {
    /// Only terms whose title contains this (any case).
    #[serde(default)]
    pub title: Option<String>,
    /// Only the term with this token.
    #[serde(default)]
    pub token: Option<String>,
    /// Only the terms with these tokens.
    #[serde(default)]
    pub tokens: Vec<String>,
    /// Offset of the first term (default 0).
    #[serde(default)]
    pub b_start: Option<String>,
    /// Most terms returned (default 25; `-1`: every term).
    #[serde(default)]
    pub b_size: Option<String>,
}

/// A vocabulary in the list.
#[derive(Serialize, JsonSchema)]
pub struct VocabularyLink {
    /// `<object>/@vocabularies/<name>`.
    #[serde(rename = "@id")]
    pub id: String,
    /// Its name.
    pub title: &'static str,
}

/// One term.
#[derive(Serialize, JsonSchema)]
pub struct TermItem {
    /// What clients show.
    pub title: String,
    /// What clients send back.
    pub token: String,
}

/// A vocabulary's terms.
#[derive(Serialize, JsonSchema)]
pub struct Terms {
    /// `<object>/@vocabularies/<name>` with the query.
    #[serde(rename = "@id")]
    pub id: String,
    /// Links to the other batches, when there are any.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub batching: Option<BatchLinks>,
    /// This batch of terms.
    pub items: Vec<TermItem>,
    /// How many terms match.
    pub items_total: usize,
}

/// GET `<path>/@vocabularies` and `<path>/@vocabularies/<name>`.
fn get(ctx: &mut Ctx<'_>, call: &Call<'_>, obj: ContentRecord) -> Result<Response> {
    let base = format!("{}/@vocabularies", ctx.url(&obj.path));
    let Some(name) = call.param("name") else {
        let mut list = Vec::new();
        let profile = ctx.profile();
        for v in vocabularies::all() {
            if vocabularies::listed(profile, v) && vocabularies::readable(ctx, v, &obj)? {
                list.push(VocabularyLink {
                    id: format!("{base}/{}", v.name),
                    title: v.name,
                });
            }
        }
        list.sort_by(|a, b| a.title.cmp(b.title));
        return Ok(Response::json(200, &list));
    };
    let v = vocabularies::find(name).ok_or_else(|| EngineError::NotFound {
        url: call.route.url(&ctx.base_url),
        context: Some(ctx.url(&obj.path)),
    })?;
    ctx.require(v.permission, &obj)?;
    let q: TermQuery = call.query()?;
    let tokens: Vec<&str> = q
        .tokens
        .iter()
        .flat_map(|t| t.split(','))
        .chain(q.token.as_deref())
        .collect();
    if q.title.is_some() && !tokens.is_empty() {
        return Err(EngineError::bad_request(
            "Query parameters 'title' and 'token'/'tokens' cannot be used together",
        ));
    }
    let mut batch = Batch::all_allowed(ctx, call.route)?;
    if ctx.profile().is_nick() && q.b_size.is_none() {
        // Nick answers every term unless the client asks for a batch.
        batch.size = usize::MAX;
    }
    let title = q.title.as_deref().map(str::to_lowercase);
    let terms: Vec<_> = (v.compute)(ctx, &obj)?
        .into_iter()
        .filter(|t| tokens.is_empty() || tokens.contains(&t.token.as_str()))
        .filter(|t| {
            title
                .as_deref()
                .is_none_or(|q| t.title.to_lowercase().contains(q))
        })
        .collect();
    let url = format!("{base}/{name}");
    let raw = call.req.query.as_str();
    let total = terms.len();
    let answer = Terms {
        id: if raw.is_empty() {
            url.clone()
        } else {
            format!("{url}?{raw}")
        },
        batching: batch.links(&url, raw, &call.route.query, total),
        items: terms
            .into_iter()
            .skip(batch.start)
            .take(batch.size)
            .map(|t| TermItem {
                title: t.title,
                token: t.token,
            })
            .collect(),
        items_total: total,
    };
    Ok(Response::json(200, &answer))
}

#[cfg(test)]
mod tests {
    #[test]
    fn the_metadata_vocabulary_names_columns_search_results_show() {
        for (column, _) in crate::catalog::vocabularies::METADATA_COLUMNS {
            assert!(
                super::super::summaries::CATALOG_FIELDS.contains(column),
                "{column}"
            );
        }
    }
}
