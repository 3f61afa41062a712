//! `@actions`: the actions the caller may use on a context (Volto's toolbar takes its Edit and
//! Contents buttons, the object buttons and the user menu from here). Expandable as the `actions`
//! component.
//!
//! | method | path | query | answer |
//! |---|---|---|---|
//! | GET | `<path>/@actions` | `categories` (repeatable or comma-separated; default all; `expand.actions.categories` in an expansion) | 200, `{object, object_buttons, portal_tabs, site_actions, user, document_actions}`, each `[{icon, id, title}]` (a Nick site adds `url`: null and leaves out empty categories unless asked for them) |
//!
//! The actions are stored data (the configuration record `plone.actions`, see
//! [`crate::site::actions`]), filtered by the permission each needs on the context and by whether the
//! caller is logged in.

use schemars::JsonSchema;
use serde::{Deserialize, Serialize};
use serde_json::Value;

use super::extract::Call;
use super::router::{RouteDef, RouteTable};
use super::Route;
use crate::core::error::Result;
use crate::core::http::Response;
use crate::core::model::actions::Action;
use crate::core::model::ContentRecord;
use crate::core::security::Permission;
use crate::runtime::context::Ctx;

/// Register `@actions` and the `actions` component.
pub fn register(r: &mut RouteTable) {
    r.route(
        RouteDef::get("@actions", get)
            .requires(Permission::View)
            .summary("The actions the caller may use on the object, by category")
            .query::<ActionsQuery>()
            .answers::<ActionsAnswer>(),
    );
    r.component("actions", Some(component));
}

/// The query of `@actions`.
#[derive(Deserialize, JsonSchema)]
pub struct ActionsQuery {
    /// Only these categories (default: all).
    #[serde(default)]
    pub categories: Vec<String>,
    /// The same, when the actions are expanded in a content GET (`?expand=actions`).
    #[serde(rename = "expand.actions.categories", default)]
    pub expand_categories: Vec<String>,
}

/// One action as clients see it.
#[derive(Serialize, JsonSchema)]
pub struct ActionItem {
    /// Its icon's name (may be empty).
    pub icon: String,
    /// Its id.
    pub id: String,
    /// Its label.
    pub title: String,
    /// Nick's key, on a Nick site only: the action's own URL, always null (this engine's actions
    /// have none; clients build the URL from the id).
    #[serde(skip_serializing_if = "Option::is_none")]
    pub url: Option<Option<String>>,
}

/// The actions by category (a category is present when asked for, even if empty).
#[derive(Serialize, JsonSchema, Default)]
pub struct ActionsAnswer {
    /// Views of the object (view, edit, contents, history, sharing).
    #[serde(skip_serializing_if = "Option::is_none")]
    pub object: Option<Vec<ActionItem>>,
    /// Operations on the object (cut, copy, paste, delete, rename).
    #[serde(skip_serializing_if = "Option::is_none")]
    pub object_buttons: Option<Vec<ActionItem>>,
    /// Top-level tabs.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub portal_tabs: Option<Vec<ActionItem>>,
    /// Site-wide links (site map, accessibility, contact).
    #[serde(skip_serializing_if = "Option::is_none")]
    pub site_actions: Option<Vec<ActionItem>>,
    /// The user menu (log in, preferences, site setup, log out).
    #[serde(skip_serializing_if = "Option::is_none")]
    pub user: Option<Vec<ActionItem>>,
    /// Actions on the document (none by default).
    #[serde(skip_serializing_if = "Option::is_none")]
    pub document_actions: Option<Vec<ActionItem>>,
}

/// The items of one category: Plone's `{icon, id, title}`, with Nick's `url` on a Nick site.
fn items(ctx: &Ctx<'_>, list: Vec<Action>) -> Vec<ActionItem> {
    let nick = ctx.profile().is_nick();
    list.into_iter()
        .map(|a| ActionItem {
            icon: a.icon,
            id: a.id,
            title: a.title,
            url: nick.then_some(None),
        })
        .collect()
}

/// The caller's actions on `obj` for the categories `route` asks for.
fn answer(ctx: &Ctx<'_>, route: &Route, obj: &ContentRecord) -> Result<ActionsAnswer> {
    let q: ActionsQuery = super::extract::query(route)?;
    let asked: Vec<String> = q
        .categories
        .iter()
        .chain(&q.expand_categories)
        .flat_map(|c| c.split(','))
        .map(|c| c.trim().to_string())
        .filter(|c| !c.is_empty())
        .collect();
    let mut out = ActionsAnswer::default();
    // Nick leaves out the categories the caller has no action in; Plone answers each one.
    let skip_empty = ctx.profile().is_nick() && asked.is_empty();
    for (cat, list) in crate::site::actions::available(ctx, obj, &asked)? {
        if skip_empty && list.is_empty() {
            continue;
        }
        let slot = match cat {
            "object" => &mut out.object,
            "object_buttons" => &mut out.object_buttons,
            "portal_tabs" => &mut out.portal_tabs,
            "site_actions" => &mut out.site_actions,
            "user" => &mut out.user,
            _ => &mut out.document_actions,
        };
        *slot = Some(items(ctx, list));
    }
    Ok(out)
}

/// GET `<path>/@actions`.
fn get(ctx: &mut Ctx<'_>, call: &Call<'_>, obj: ContentRecord) -> Result<Response> {
    Ok(Response::json(200, &answer(ctx, call.route, &obj)?))
}

/// The `actions` component: the same as GET `@actions`.
fn component(ctx: &Ctx<'_>, route: &Route, obj: &ContentRecord) -> Result<Value> {
    Ok(serde_json::to_value(answer(ctx, route, obj)?)?)
}
