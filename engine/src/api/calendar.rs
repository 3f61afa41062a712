//! `ics_view` (also `@ics_view`): an Event, or every event the caller may view at and below a
//! folder, as an iCalendar file (`text/calendar`), served as an attachment unless
//! `?disposition=inline`. The text is made by [`crate::content::calendar`].

use schemars::JsonSchema;
use serde::Deserialize;

use super::extract::Call;
use super::router::{Registry, RouteDef};
use crate::content::calendar;
use crate::core::error::{EngineError, Result};
use crate::core::http::Response;
use crate::core::model::ContentRecord;
use crate::core::security::Permission;
use crate::runtime::context::Ctx;

/// Register `ics_view`.
pub fn register(r: &mut Registry) {
    r.route(
        RouteDef::get("@ics_view", get)
            .requires(Permission::View)
            .summary(
                "The event, or every viewable event at and below the object, as iCalendar \
                 (`text/calendar`); `<path>/ics_view` is the same",
            )
            .query::<IcsQuery>(),
    );
}

/// The query of `ics_view`.
#[derive(Deserialize, JsonSchema)]
#[serde(deny_unknown_fields)]
pub struct IcsQuery {
    /// `attachment` (the default) or `inline`.
    #[serde(default)]
    pub disposition: Option<String>,
}

/// GET `<path>/ics_view`.
fn get(ctx: &mut Ctx<'_>, call: &Call<'_>, obj: ContentRecord) -> Result<Response> {
    let q: IcsQuery = call.query()?;
    let disposition = match q.disposition.as_deref() {
        None | Some("attachment") => "attachment",
        Some("inline") => "inline",
        Some(other) => {
            return Err(EngineError::bad_request(format!(
                "Invalid query parameter 'disposition': '{other}' (attachment or inline)"
            )))
        }
    };
    let events = calendar::events_at(ctx, &obj)?;
    let name = if obj.is_root() {
        "site"
    } else {
        obj.id.as_str()
    };
    let text = calendar::ics(ctx, obj.title(), &events);
    let mut resp = Response::empty(200);
    resp.body = text.into_bytes();
    Ok(resp
        .with_header("Content-Type", "text/calendar; charset=utf-8")
        .with_header(
            "Content-Disposition",
            &format!("{disposition}; filename=\"{name}.ics\""),
        ))
}
