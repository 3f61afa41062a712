//! `@transactions` on the site root: the changes the site has recorded, newest first, and undoing
//! selected ones, as plone.restapi serves them for Volto's Undo control panel (the rules are in
//! [`crate::content::undo`]).

use schemars::JsonSchema;
use serde::{Deserialize, Serialize};

use super::extract::Call;
use super::router::{RouteDef, RouteTable};
use crate::content::undo;
use crate::core::clock::iso;
use crate::core::error::Result;
use crate::core::http::Response;
use crate::core::model::ContentRecord;
use crate::core::security::Permission;
use crate::runtime::context::Ctx;

/// Register `@transactions`.
pub fn register(r: &mut RouteTable) {
    r.route(
        RouteDef::get("@transactions", list)
            .requires(Permission::ManagePortal)
            .root_only()
            .summary(
                "The changes the site has recorded, newest first (at most 1000): versions \
                 (creations and edits), workflow transitions and deletions into the recycle bin",
            )
            .answers::<Vec<Transaction>>(),
    );
    r.route(
        RouteDef::patch("@transactions", revert)
            .requires(Permission::ManagePortal)
            .root_only()
            .summary(
                "Undo the changes `transaction_ids` names: a creation by deleting the object, an \
                 edit by reverting to the version before it, a transition by the transition \
                 back, a deletion by restoring from the recycle bin. Only an object's latest \
                 changes can be undone; 409 for a change that cannot be, and then nothing is \
                 undone",
            )
            .body::<RevertBody>()
            .answers::<RevertAnswer>(),
    );
}

/// One recorded change.
#[derive(Serialize, JsonSchema)]
pub struct Transaction {
    /// `<path> <what>`.
    pub description: String,
    /// Its id, for `PATCH @transactions`.
    pub id: String,
    /// How many bytes it recorded.
    pub size: usize,
    /// When.
    pub time: String,
    /// Who (login).
    pub username: String,
}

/// The body of `PATCH @transactions`.
#[derive(Deserialize, JsonSchema)]
#[serde(deny_unknown_fields)]
pub struct RevertBody {
    /// The ids of the changes to undo (as listed).
    pub transaction_ids: Vec<String>,
}

/// The answer of `PATCH @transactions`.
#[derive(Serialize, JsonSchema)]
pub struct RevertAnswer {
    /// What was done.
    pub message: String,
}

fn list(ctx: &mut Ctx<'_>, _call: &Call<'_>, _root: ContentRecord) -> Result<Response> {
    let out: Vec<Transaction> = undo::list(ctx)?
        .into_iter()
        .map(|c| Transaction {
            id: c.kind.id(),
            description: c.description,
            size: c.size,
            time: iso(&c.time),
            username: c.actor,
        })
        .collect();
    Ok(Response::json(200, &out))
}

fn revert(ctx: &mut Ctx<'_>, call: &Call<'_>, _root: ContentRecord) -> Result<Response> {
    let body: RevertBody = call.body()?;
    undo::undo(ctx, &body.transaction_ids)?;
    Ok(Response::json(
        200,
        &RevertAnswer {
            message: "Transactions has been reverted successfully.".into(),
        },
    ))
}
