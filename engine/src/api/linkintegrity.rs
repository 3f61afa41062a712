//! `@linkintegrity?uids=...`: before deleting objects, which other objects link to them (or to
//! anything inside them), from the catalog's reverse link index (links found in blocks,
//! `relatedItems` and rich text), and how many items each contains.

use schemars::JsonSchema;
use serde::{Deserialize, Serialize};

use super::extract::Call;
use super::router::{RouteDef, RouteTable};
use crate::catalog;
use crate::content::tree;
use crate::core::error::{EngineError, Result};
use crate::core::http::Response;
use crate::core::model::ContentRecord;
use crate::core::security::Permission;
use crate::runtime::context::Ctx;

/// Register `@linkintegrity`.
pub fn register(r: &mut RouteTable) {
    r.route(
        RouteDef::get("@linkintegrity", get)
            .requires(Permission::View)
            .summary(
                "For each object of `uids` (repeatable) about to be deleted: the objects the caller \
                 may view that link to it or to anything inside it (`breaches`), and how many \
                 items it contains (`items_total`)",
            )
            .query::<LinkintegrityQuery>()
            .answers::<Vec<Target>>(),
    );
}

/// The query of `@linkintegrity`.
#[derive(Deserialize, JsonSchema)]
pub struct LinkintegrityQuery {
    /// The uids of the objects to be deleted (repeatable).
    #[serde(default)]
    pub uids: Vec<String>,
}

/// One object to be deleted.
#[derive(Serialize, JsonSchema)]
pub struct Target {
    /// Its URL.
    #[serde(rename = "@id")]
    pub id: String,
    /// Its type.
    #[serde(rename = "@type")]
    pub type_name: String,
    /// The objects that link to it or into it.
    pub breaches: Vec<Breach>,
    /// Its description.
    pub description: String,
    /// How many items it contains (its whole subtree, without it).
    pub items_total: usize,
    /// Its workflow state.
    pub review_state: Option<String>,
    /// Its title.
    pub title: String,
    /// Its type's title.
    pub type_title: String,
}

/// An object whose links would break.
#[derive(Serialize, JsonSchema)]
pub struct Breach {
    /// Its URL.
    #[serde(rename = "@id")]
    pub id: String,
    /// Its title.
    pub title: String,
    /// Its uid.
    pub uid: String,
}

fn get(ctx: &mut Ctx<'_>, call: &Call<'_>, _obj: ContentRecord) -> Result<Response> {
    let q: LinkintegrityQuery = call.query()?;
    let uids: Vec<String> = q
        .uids
        .iter()
        .flat_map(|u| u.split(','))
        .map(str::trim)
        .filter(|u| !u.is_empty())
        .map(str::to_string)
        .collect();
    if uids.is_empty() {
        return Err(EngineError::bad_request("Missing parameter 'uids'"));
    }
    let tokens = ctx.principal.search_tokens();
    let mut targets = Vec::new();
    for uid in &uids {
        match catalog::entry(ctx, uid)? {
            Some(e) if e.visible_to(&tokens) => targets.push(e),
            _ => {
                return Err(EngineError::bad_request(format!(
                    "Query parameter 'uids': no object you may view has the UID '{uid}'"
                )))
            }
        }
    }
    let within_targets = |path: &str| {
        targets.iter().any(|t| {
            t.path.is_empty() || path == t.path || path.starts_with(&format!("{}/", t.path))
        })
    };
    let mut out = Vec::new();
    for t in &targets {
        let members = tree::subtree_uids(ctx, &t.path)?;
        let mut sources: Vec<String> = Vec::new();
        for m in &members {
            for s in catalog::linking_to(ctx, m)? {
                if !sources.contains(&s) {
                    sources.push(s);
                }
            }
        }
        let mut breaches = Vec::new();
        for s in sources {
            let Some(src) = catalog::entry(ctx, &s)? else {
                continue;
            };
            if !src.visible_to(&tokens) || within_targets(&src.path) {
                continue;
            }
            breaches.push(Breach {
                id: ctx.url(&src.path),
                title: src.title().to_string(),
                uid: src.uid.clone(),
            });
        }
        breaches.sort_by(|a, b| a.id.cmp(&b.id));
        let rec = t.record();
        // Plone counts the items the target contains; Nick counts its breaches.
        let items_total = if ctx.profile().is_nick() {
            breaches.len()
        } else {
            members.len().saturating_sub(1)
        };
        out.push(Target {
            id: ctx.url(&t.path),
            type_name: t.type_name.clone(),
            breaches,
            description: rec.description().to_string(),
            items_total,
            review_state: t.review_state.clone(),
            title: t.title().to_string(),
            type_title: ctx.type_of(&rec)?.title.clone(),
        });
    }
    Ok(Response::json(200, &out))
}
