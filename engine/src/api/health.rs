//! `@health` (for load balancers and monitors, in the shape of the Health Check RFC draft that
//! Nick follows) and `@translated-messages` (the UI strings the API serves, translated into one
//! of the site's languages; the rules are in [`crate::site::i18n`]).

use std::collections::BTreeMap;

use schemars::JsonSchema;
use serde::{Deserialize, Serialize};

use super::extract::Call;
use super::router::{Registry, RouteDef};
use crate::core::clock::iso;
use crate::core::error::Result;
use crate::core::http::Response;
use crate::core::model::ContentRecord;
use crate::runtime::context::Ctx;
use crate::site::i18n;

/// Register the routes.
pub fn register(r: &mut Registry) {
    r.route(
        RouteDef::get("@health", health)
            .root_only()
            .summary(
                "Health (anyone): `status` `pass` or `fail`, and `checks`: `uptime` (seconds since \
                 the engine started, by the host's clock), `store` (a read of the store), \
                 `schema` (the stored schema version against the one this build writes)",
            )
            .answers::<Health>(),
    );
    r.route(
        RouteDef::get("@translated-messages", translated)
            .root_only()
            .summary(
                "The UI strings the API serves (type, workflow, action and control panel titles) \
                 translated into `language` (one of the site's languages), else the first \
                 `Accept-Language` the site has, else its default language (anyone)",
            )
            .query::<MessagesQuery>()
            .answers::<Messages>(),
    );
}

/// The health of the service.
#[derive(Serialize, JsonSchema)]
pub struct Health {
    /// This endpoint's URL.
    #[serde(rename = "@id")]
    pub id: String,
    /// `pass` when every check passes, else `fail`.
    pub status: &'static str,
    /// The checks by name.
    pub checks: BTreeMap<&'static str, Vec<Check>>,
}

/// One check.
#[derive(Serialize, JsonSchema)]
pub struct Check {
    /// What was checked: `system` or `datastore`.
    #[serde(rename = "componentType")]
    pub component_type: &'static str,
    /// What was measured.
    #[serde(rename = "observedValue")]
    pub observed_value: serde_json::Value,
    /// Its unit, if any.
    #[serde(rename = "observedUnit", skip_serializing_if = "Option::is_none")]
    pub observed_unit: Option<&'static str>,
    /// `pass` or `fail`.
    pub status: &'static str,
    /// When it was measured.
    pub time: String,
    /// What went wrong (failed checks only).
    #[serde(skip_serializing_if = "Option::is_none")]
    pub output: Option<String>,
}

fn health(ctx: &mut Ctx<'_>, _: &Call<'_>, _: ContentRecord) -> Result<Response> {
    let report = crate::site::health::check(ctx);
    let time = iso(&ctx.now());
    let status = |ok: bool| if ok { "pass" } else { "fail" };
    let mut checks = BTreeMap::new();
    checks.insert(
        "uptime",
        vec![Check {
            component_type: "system",
            observed_value: report.uptime_secs.into(),
            observed_unit: Some("s"),
            status: "pass",
            time: time.clone(),
            output: None,
        }],
    );
    checks.insert(
        "store",
        vec![Check {
            component_type: "datastore",
            observed_value: ctx.core.options.store_backend.clone().into(),
            observed_unit: None,
            status: status(report.store_ok()),
            time: time.clone(),
            output: report.store_error.clone(),
        }],
    );
    checks.insert(
        "schema",
        vec![Check {
            component_type: "datastore",
            observed_value: report
                .stored_schema
                .map_or(serde_json::Value::Null, Into::into),
            observed_unit: None,
            status: status(report.schema_ok()),
            time,
            output: (!report.schema_ok())
                .then(|| format!("this build writes schema {}", report.schema_version)),
        }],
    );
    let all_ok = report.store_ok() && report.schema_ok();
    Ok(Response::json(
        if all_ok { 200 } else { 503 },
        &Health {
            id: ctx.url("/@health"),
            status: status(all_ok),
            checks,
        },
    ))
}

/// Which language.
#[derive(Deserialize, JsonSchema)]
#[serde(deny_unknown_fields)]
pub struct MessagesQuery {
    /// A language code of the site.
    pub language: Option<String>,
}

/// The UI strings in one language.
#[derive(Serialize, JsonSchema)]
pub struct Messages {
    /// This endpoint's URL.
    #[serde(rename = "@id")]
    pub id: String,
    /// The language of the translations.
    pub language: String,
    /// The site's languages (each may be asked for).
    pub available_languages: Vec<String>,
    /// Message id (the English string) → its translation (the id itself where there is none).
    pub messages: BTreeMap<String, String>,
}

fn translated(ctx: &mut Ctx<'_>, call: &Call<'_>, _: ContentRecord) -> Result<Response> {
    let q: MessagesQuery = call.query()?;
    let (language, available) =
        i18n::pick_language(ctx, q.language.as_deref(), &ctx.accept_language)?;
    let messages = i18n::messages(ctx, &language)?;
    // The answer depends on Accept-Language: shared caches must keep one per language.
    Ok(Response::json(
        200,
        &Messages {
            id: ctx.url("/@translated-messages"),
            language,
            available_languages: available,
            messages,
        },
    )
    .with_header("Vary", "Accept-Language"))
}
