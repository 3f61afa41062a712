//! `@recyclebin`: list, show, restore and purge deleted content (the rules are in
//! [`crate::content::recyclebin`]).

use schemars::JsonSchema;
use serde::{Deserialize, Serialize};

use super::extract::Call;
use super::router::{RouteDef, RouteTable};
use crate::content::recyclebin::{self, BinItem};
use crate::content::tree;
use crate::core::clock::iso;
use crate::core::error::{EngineError, Result};
use crate::core::http::Response;
use crate::core::model::ContentRecord;
use crate::core::security::Permission;
use crate::people::permissions::Access;
use crate::runtime::context::Ctx;

/// Register the recycle bin routes.
pub fn register(r: &mut RouteTable) {
    r.route(
        RouteDef::get("@recyclebin", list)
            .checked_by_handler()
            .root_only()
            .summary(
                "The items of the recycle bin, newest first: all of them for Manage portal, \
                 else the ones the caller deleted (logged-in callers)",
            )
            .answers::<BinListing>(),
    );
    r.route(
        RouteDef::get("@recyclebin/{recycle_id}", get)
            .checked_by_handler()
            .root_only()
            .at_any_path()
            .summary(
                "One item of the bin with its descendants flattened in `items` (Manage portal, or \
                 who deleted it); also at `<old path>/@recyclebin/{recycle_id}`, the path its \
                 object had",
            )
            .answers::<BinEntry>(),
    );
    r.route(
        RouteDef::post("@recyclebin/{recycle_id}/restore", restore)
            .checked_by_handler()
            .root_only()
            .at_any_path()
            .summary(
                "Restore an item to its old parent, or into `target_path` (a folderish object \
                 where the caller may add content); 400 when the old parent is gone or the id is \
                 taken and no target is given, or the target is missing or not folderish",
            )
            .body::<RestoreRequest>()
            .answers::<RestoreAnswer>(),
    );
    r.route(
        RouteDef::delete("@recyclebin/{recycle_id}", purge)
            .checked_by_handler()
            .root_only()
            .at_any_path()
            .status(204)
            .summary("Purge one item for good (Manage portal, or who deleted it)"),
    );
    r.route(
        RouteDef::delete("@recyclebin", purge_all)
            .checked_by_handler()
            .root_only()
            .status(204)
            .summary("Empty the recycle bin (Manage portal)"),
    );
}

/// The bin's items the caller may see.
#[derive(Serialize, JsonSchema)]
pub struct BinListing {
    /// This endpoint's URL.
    #[serde(rename = "@id")]
    pub id: String,
    /// The items, newest first.
    pub items: Vec<BinEntry>,
    /// How many.
    pub items_total: usize,
}

/// An action on a bin item: `{"purge": url}` or `{"restore": url}`.
#[derive(Serialize, JsonSchema)]
pub struct BinAction {
    /// The URL to DELETE to purge the item.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub purge: Option<String>,
    /// The URL to POST to restore the item.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub restore: Option<String>,
}

/// One item of the bin.
#[derive(Serialize, JsonSchema)]
pub struct BinEntry {
    /// The item's URL in the bin.
    #[serde(rename = "@id")]
    pub id_url: String,
    /// The deleted object's type.
    #[serde(rename = "@type")]
    pub type_name: String,
    /// What can be done with it.
    pub actions: Vec<BinAction>,
    /// Login of who deleted it.
    pub deleted_by: String,
    /// When.
    pub deletion_date: String,
    /// Whether objects below it were deleted with it.
    pub has_children: bool,
    /// The deleted object's id.
    pub id: String,
    /// Its language.
    pub language: String,
    /// The path its parent had (`/` for the root).
    pub parent_path: String,
    /// The path it had.
    pub path: String,
    /// The item's id in the bin.
    pub recycle_id: String,
    /// Its workflow state when deleted.
    pub review_state: Option<String>,
    /// Its title.
    pub title: String,
    /// Only for one item: the objects deleted with it (below it), flattened, in tree order.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub items: Option<Vec<BinMember>>,
}

/// An object deleted together with a bin item's top object.
#[derive(Serialize, JsonSchema)]
pub struct BinMember {
    /// Its type.
    #[serde(rename = "@type")]
    pub type_name: String,
    /// Its id.
    pub id: String,
    /// The path it had.
    pub path: String,
    /// Its title.
    pub title: String,
    /// Its workflow state when deleted.
    pub review_state: Option<String>,
    /// Its uid (kept when restored).
    #[serde(rename = "UID")]
    pub uid: String,
}

/// A restore request.
#[derive(Deserialize, JsonSchema)]
#[serde(deny_unknown_fields)]
pub struct RestoreRequest {
    /// Site path of the folderish object to restore into (`/news`); default: the old parent.
    pub target_path: Option<String>,
}

/// The answer to a restore.
#[derive(Serialize, JsonSchema)]
pub struct RestoreAnswer {
    /// A human-readable message.
    pub message: String,
    /// The restored object.
    pub restored_item: RestoredItem,
    /// `success`.
    pub status: String,
}

/// The restored object, briefly.
#[derive(Serialize, JsonSchema)]
pub struct RestoredItem {
    /// Its URL.
    #[serde(rename = "@id")]
    pub id_url: String,
    /// Its type.
    #[serde(rename = "@type")]
    pub type_name: String,
    /// Its id.
    pub id: String,
    /// Its title.
    pub title: String,
}

fn display(path: &str) -> String {
    if path.is_empty() {
        "/".into()
    } else {
        path.to_string()
    }
}

/// An item's URL: below the site root, or on a Nick site below the path its object had (as
/// Nick writes it; both answer).
fn item_url(ctx: &Ctx<'_>, item: &BinItem) -> String {
    let under = if ctx.profile().is_nick() {
        item.path()
    } else {
        ""
    };
    ctx.url(&format!("{under}/@recyclebin/{}", item.recycle_id))
}

fn entry(ctx: &Ctx<'_>, item: &BinItem, with_members: bool) -> Result<BinEntry> {
    let top = item.top()?;
    let url = item_url(ctx, item);
    Ok(BinEntry {
        id_url: url.clone(),
        type_name: top.type_name.clone(),
        actions: vec![
            BinAction {
                purge: Some(url.clone()),
                restore: None,
            },
            BinAction {
                purge: None,
                restore: Some(format!("{url}/restore")),
            },
        ],
        deleted_by: item.deleted_by.clone(),
        deletion_date: iso(&item.deletion_date),
        has_children: item.members.len() > 1,
        id: top.id.clone(),
        language: crate::content::multilingual::language_of(top).to_string(),
        parent_path: display(item.parent_path()),
        path: display(item.path()),
        recycle_id: item.recycle_id.clone(),
        review_state: top.review_state.clone(),
        title: top.str_field("title").to_string(),
        items: with_members.then(|| item.members.iter().skip(1).map(member).collect()),
    })
}

fn member(rec: &ContentRecord) -> BinMember {
    BinMember {
        type_name: rec.type_name.clone(),
        id: rec.id.clone(),
        path: rec.path.clone(),
        title: rec.str_field("title").to_string(),
        review_state: rec.review_state.clone(),
        uid: rec.uid.clone(),
    }
}

fn the_item(ctx: &Ctx<'_>, call: &Call<'_>) -> Result<BinItem> {
    let id = call.param("recycle_id").unwrap_or("");
    recyclebin::find_at(
        ctx,
        &call.route.object_path,
        id,
        &call.route.url(&ctx.base_url),
    )
}

fn list(ctx: &mut Ctx<'_>, _: &Call<'_>, _: ContentRecord) -> Result<Response> {
    let items = recyclebin::visible(ctx)?
        .iter()
        .map(|i| entry(ctx, i, false))
        .collect::<Result<Vec<_>>>()?;
    Ok(Response::json(
        200,
        &BinListing {
            id: ctx.url("/@recyclebin"),
            items_total: items.len(),
            items,
        },
    ))
}

fn get(ctx: &mut Ctx<'_>, call: &Call<'_>, _: ContentRecord) -> Result<Response> {
    let item = the_item(ctx, call)?;
    Ok(Response::json(200, &entry(ctx, &item, true)?))
}

fn restore(ctx: &mut Ctx<'_>, call: &Call<'_>, _: ContentRecord) -> Result<Response> {
    let body: RestoreRequest = call.body()?;
    let item = the_item(ctx, call)?;
    let target = match body.target_path.as_deref() {
        None => None,
        Some(raw) => {
            let path = raw.trim_end_matches('/');
            let path = if path.is_empty() || path.starts_with('/') {
                path.to_string()
            } else {
                format!("/{path}")
            };
            let found = tree::at_path(ctx, &path)?.ok_or_else(|| {
                EngineError::bad_request(format!(
                    "Invalid property 'target_path': no object at '{raw}'"
                ))
            })?;
            if !ctx.permitted(Permission::View, &found)? {
                return Err(EngineError::bad_request(format!(
                    "Invalid property 'target_path': no object at '{raw}'"
                )));
            }
            Some(found)
        }
    };
    let parent = recyclebin::restore_target(ctx, &item, target)?;
    let top = recyclebin::restore(ctx, item, parent)?;
    let title = top.str_field("title").to_string();
    Ok(Response::json(
        200,
        &RestoreAnswer {
            message: format!("Document {title} restored successfully"),
            restored_item: RestoredItem {
                id_url: ctx.url(&top.path),
                type_name: top.type_name.clone(),
                id: top.id.clone(),
                title,
            },
            status: "success".into(),
        },
    ))
}

fn purge(ctx: &mut Ctx<'_>, call: &Call<'_>, _: ContentRecord) -> Result<Response> {
    let item = the_item(ctx, call)?;
    recyclebin::purge(ctx, &item)?;
    Ok(Response::empty(204))
}

fn purge_all(ctx: &mut Ctx<'_>, _: &Call<'_>, _: ContentRecord) -> Result<Response> {
    if !recyclebin::manages_bin(ctx)? {
        return Err(ctx.denied(Permission::ManagePortal));
    }
    recyclebin::purge_all(ctx)?;
    Ok(Response::empty(204))
}
