//! `@upgrade`: the schema version of the stored data and the migration steps this build knows
//! ([`crate::site::migrations`]).
//!
//! | method | path | body | answer |
//! |---|---|---|---|
//! | GET | `/@upgrade` | | 200, `{@id, upgrade_steps: {"<from>-<to>": [{id, title}]}, steps: [{id, title}], versions: {fs, instance}}` |
//! | POST | `/@upgrade` | `{dry_run?: bool}` | 200, `{@id, dry_run, report, upgraded, versions}` |
//!
//! `versions.fs` is the schema version this build writes, `versions.instance` the stored one;
//! `upgrade_steps` are the pending steps (the engine runs them when it opens a store, so a
//! running site normally has none), `steps` every step the build knows. POST runs the pending
//! steps (none with `dry_run`) and reports what ran. Only on the site root; Manage portal.

use std::collections::BTreeMap;

use schemars::JsonSchema;
use serde::{Deserialize, Serialize};

use super::extract::Call;
use super::router::{Registry, RouteDef};
use crate::core::error::Result;
use crate::core::http::Response;
use crate::core::model::ContentRecord;
use crate::core::security::Permission;
use crate::runtime::context::Ctx;
use crate::site::migrations::{self, Step, STEPS};

/// Register `@upgrade`.
pub fn register(r: &mut Registry) {
    r.route(
        RouteDef::get("@upgrade", get)
            .root_only()
            .requires(Permission::ManagePortal)
            .summary("The stored and current schema versions and the migration steps")
            .answers::<UpgradeInfo>(),
    );
    r.route(
        RouteDef::post("@upgrade", post)
            .root_only()
            .requires(Permission::ManagePortal)
            .summary("Run the pending migration steps (`dry_run`: only report them)")
            .body::<UpgradeRequest>()
            .answers::<UpgradeReport>(),
    );
}

/// One migration step.
#[derive(Serialize, JsonSchema)]
pub struct StepInfo {
    /// `<from>-<to>`.
    pub id: String,
    /// What it does.
    pub title: &'static str,
}

/// Schema versions.
#[derive(Serialize, JsonSchema)]
pub struct Versions {
    /// The version this build writes.
    pub fs: String,
    /// The stored version.
    pub instance: String,
}

/// The answer of GET `@upgrade`.
#[derive(Serialize, JsonSchema)]
pub struct UpgradeInfo {
    /// `<site>/@upgrade`.
    #[serde(rename = "@id")]
    pub id: String,
    /// The pending steps, by `<from>-<to>`.
    pub upgrade_steps: BTreeMap<String, Vec<StepInfo>>,
    /// Every step this build knows.
    pub steps: Vec<StepInfo>,
    /// The versions.
    pub versions: Versions,
}

/// The body of POST `@upgrade`.
#[derive(Deserialize, JsonSchema)]
#[serde(deny_unknown_fields)]
pub struct UpgradeRequest {
    /// Only report what would run.
    #[serde(default)]
    pub dry_run: bool,
}

/// The answer of POST `@upgrade`.
#[derive(Serialize, JsonSchema)]
pub struct UpgradeReport {
    /// `<site>/@upgrade`.
    #[serde(rename = "@id")]
    pub id: String,
    /// Whether it was a dry run.
    pub dry_run: bool,
    /// What ran, one line each.
    pub report: String,
    /// Whether the stored version changed.
    pub upgraded: bool,
    /// The versions after.
    pub versions: Versions,
}

fn info(s: &Step) -> StepInfo {
    StepInfo {
        id: format!("{}-{}", s.from, s.from + 1),
        title: s.description,
    }
}

fn versions(instance: u32) -> Versions {
    Versions {
        fs: crate::site::migrations::current_version().to_string(),
        instance: instance.to_string(),
    }
}

fn stored_version(ctx: &Ctx<'_>) -> Result<u32> {
    Ok(migrations::check(ctx)?.unwrap_or(crate::site::migrations::current_version()))
}

/// GET `/@upgrade`.
fn get(ctx: &mut Ctx<'_>, _: &Call<'_>, _: ContentRecord) -> Result<Response> {
    let instance = stored_version(ctx)?;
    let pending: BTreeMap<String, Vec<StepInfo>> = STEPS
        .iter()
        .filter(|s| s.from >= instance)
        .map(|s| (format!("{}-{}", s.from, s.from + 1), vec![info(s)]))
        .collect();
    Ok(Response::json(
        200,
        &UpgradeInfo {
            id: format!("{}/@upgrade", ctx.base_url),
            upgrade_steps: pending,
            steps: STEPS.iter().map(info).collect(),
            versions: versions(instance),
        },
    ))
}

/// POST `/@upgrade`.
fn post(ctx: &mut Ctx<'_>, call: &Call<'_>, _: ContentRecord) -> Result<Response> {
    let body: UpgradeRequest = call.body()?;
    let from = stored_version(ctx)?;
    let mut report = String::new();
    if body.dry_run {
        report.push_str("Dry run selected.\n");
    }
    report.push_str(&format!(
        "Starting the migration from schema version {from}.\n"
    ));
    let mut to = from;
    if body.dry_run {
        for s in STEPS.iter().filter(|s| s.from >= from) {
            report.push_str(&format!(
                "Would run step {}: {}\n",
                info(s).id,
                s.description
            ));
        }
    } else {
        let r = migrations::run(ctx)?;
        for d in &r.steps {
            report.push_str(&format!("Ran step: {d}\n"));
        }
        to = r.to.unwrap_or(from);
    }
    report.push_str(&format!("The data is at schema version {to}.\n"));
    Ok(Response::json(
        200,
        &UpgradeReport {
            id: format!("{}/@upgrade", ctx.base_url),
            dry_run: body.dry_run,
            report,
            upgraded: to != from,
            versions: versions(to),
        },
    ))
}
