//! Jobs (`@jobs`: outbox deliveries and runs, kept by [`crate::automation::jobs`]) and scheduled jobs
//! (`@scheduled-jobs`, `@scheduled-job-actions`).
//!
//! | method | path | body | answer |
//! |---|---|---|---|
//! | GET | `/@jobs`, `/@jobs/<uuid>` | | 200, jobs / a job |
//! | GET | `/@jobs/<uuid>/result` | | 200, the job's `result` |
//! | DELETE | `/@jobs/<uuid>` | | 204 |
//! | POST | `/@jobs/<uuid>/abort`, `/@jobs/<uuid>/retry` | | 204 |
//! | GET | `/@scheduled-jobs`, `/@scheduled-jobs/<id>` | | 200, scheduled jobs / one (`next_run`, `last_run`) |
//! | POST | `/@scheduled-jobs` | `{id, title, description?, enabled?, action, params?, schedule}` | 201, the scheduled job |
//! | PATCH | `/@scheduled-jobs/<id>` | any of those | 204 |
//! | DELETE | `/@scheduled-jobs/<id>` | | 204 |
//! | POST | `/@scheduled-jobs/<id>/start` | | 204 (runs it now: the run is a job) |
//! | GET | `/@scheduled-job-actions` | | 200, the actions with their parameters' schema |
//!
//! Every route needs Manage portal.

use schemars::JsonSchema;
use serde::{Deserialize, Serialize};
use serde_json::{json, Map, Value};

use super::extract::Call;
use super::router::{RouteDef, RouteTable};
use super::rules_controlpanel::{settings_schema, AddableKind};
use crate::automation::jobs::{self, Delivery, Job};
use crate::automation::rules;
use crate::core::error::{EngineError, Result};
use crate::core::http::Response;
use crate::core::model::ContentRecord;
use crate::core::security::Permission;
use crate::runtime::context::Ctx;

/// Register the routes.
pub fn register(r: &mut RouteTable) {
    r.route(
        RouteDef::get("@jobs", list_jobs)
            .root_only()
            .requires(Permission::ManagePortal)
            .summary(
                "Every job (outbox deliveries, runs), oldest first; with b_start or b_size, \
                 one batch of them ({@id, items, items_total, batching})",
            )
            .query::<super::batching::BatchQuery>()
            .answers::<Vec<JobView>>(),
    );
    r.route(
        RouteDef::get("@jobs/{id}", get_job)
            .root_only()
            .requires(Permission::ManagePortal)
            .summary("A job")
            .answers::<JobView>(),
    );
    r.route(
        RouteDef::get("@jobs/{id}/result", job_result)
            .root_only()
            .requires(Permission::ManagePortal)
            .summary("What a job produced (its `result`)")
            .answers::<Map<String, Value>>(),
    );
    r.route(
        RouteDef::delete("@jobs/{id}", delete_job)
            .root_only()
            .requires(Permission::ManagePortal)
            .status(204)
            .summary("Delete a job (a queued delivery is not sent)"),
    );
    r.route(
        RouteDef::post("@jobs/{id}/abort", abort_job)
            .root_only()
            .requires(Permission::ManagePortal)
            .status(204)
            .summary("Abort a queued or running job"),
    );
    r.route(
        RouteDef::post("@jobs/{id}/retry", retry_job)
            .root_only()
            .requires(Permission::ManagePortal)
            .status(204)
            .summary("Queue a failed or aborted delivery again"),
    );
    r.route(
        RouteDef::get("@scheduled-jobs", list_schedules)
            .root_only()
            .requires(Permission::ManagePortal)
            .summary("Every scheduled job")
            .answers::<Vec<ScheduleView>>(),
    );
    r.route(
        RouteDef::post("@scheduled-jobs", add_schedule)
            .root_only()
            .requires(Permission::ManagePortal)
            .status(201)
            .summary("Add a scheduled job (an action run on a cron schedule)")
            .body::<ScheduleRequest>()
            .answers::<ScheduleView>(),
    );
    r.route(
        RouteDef::get("@scheduled-jobs/{id}", get_schedule)
            .root_only()
            .requires(Permission::ManagePortal)
            .summary("A scheduled job")
            .answers::<ScheduleView>(),
    );
    r.route(
        RouteDef::patch("@scheduled-jobs/{id}", patch_schedule)
            .root_only()
            .requires(Permission::ManagePortal)
            .status(204)
            .summary("Change a scheduled job")
            .body::<ScheduleRequest>(),
    );
    r.route(
        RouteDef::delete("@scheduled-jobs/{id}", delete_schedule)
            .root_only()
            .requires(Permission::ManagePortal)
            .status(204)
            .summary("Delete a scheduled job (its past runs stay in @jobs)"),
    );
    r.route(
        RouteDef::post("@scheduled-jobs/{id}/start", start_schedule)
            .root_only()
            .requires(Permission::ManagePortal)
            .status(204)
            .summary("Run a scheduled job now (the run is a job)"),
    );
    r.route(
        RouteDef::get("@scheduled-job-actions", schedule_actions)
            .root_only()
            .requires(Permission::ManagePortal)
            .summary("The actions a scheduled job can run, with their parameters' schema")
            .answers::<Vec<AddableKind>>(),
    );
}

// ---------------------------------------------------------------- jobs

/// A job (Nick's schema, plus the delivery's kind and attempts).
#[derive(Serialize, JsonSchema)]
pub struct JobView {
    /// Its URL.
    #[serde(rename = "@id")]
    pub url: String,
    /// Its id (also the idempotency key of its delivery).
    pub uuid: String,
    /// What it is.
    pub title: String,
    /// More about it.
    pub description: String,
    /// What it was started with.
    pub params: Map<String, Value>,
    /// Who caused it.
    pub actor: String,
    /// When it was created.
    pub created: String,
    /// When its last attempt started.
    pub started: Option<String>,
    /// When it finished.
    pub finished: Option<String>,
    /// `created`, `queued` (waiting for a retry), `running`, `completed`, `failed` (with
    /// `result.permanent` or `result.dead_letter`) or `aborted`.
    pub status: String,
    /// What it produced.
    pub result: Map<String, Value>,
    /// `webhook` or `mail` for a delivery; a scheduled job's run: its action
    /// (`purge-recyclebin`, `reindex`).
    #[serde(skip_serializing_if = "Option::is_none")]
    pub kind: Option<String>,
    /// Attempts made.
    pub attempts: u32,
}

fn job_view(ctx: &Ctx<'_>, j: Job) -> JobView {
    let iso = |t: &chrono::DateTime<chrono::Utc>| crate::core::clock::iso(t);
    JobView {
        url: format!("{}/@jobs/{}", ctx.base_url, j.uuid),
        kind: match &j.delivery {
            Some(Delivery::Webhook { .. }) => Some("webhook".to_string()),
            Some(Delivery::Mail { .. }) => Some("mail".to_string()),
            None => j
                .params
                .get("action")
                .and_then(Value::as_str)
                .map(str::to_string),
        },
        created: iso(&j.created),
        started: j.started.as_ref().map(iso),
        finished: j.finished.as_ref().map(iso),
        uuid: j.uuid,
        title: j.title,
        description: j.description,
        params: j.params,
        actor: j.actor,
        status: j.status,
        result: j.result,
        attempts: j.attempts,
    }
}

/// One batch of jobs (`@jobs?b_size=...`).
#[derive(Serialize, JsonSchema)]
pub struct JobBatch {
    /// The listing's URL.
    #[serde(rename = "@id")]
    pub url: String,
    /// The jobs of this batch, oldest first.
    pub items: Vec<JobView>,
    /// How many jobs there are.
    pub items_total: usize,
    /// Links to the other batches (none when everything fits in one).
    #[serde(skip_serializing_if = "Option::is_none")]
    pub batching: Option<super::batching::BatchLinks>,
}

fn list_jobs(ctx: &mut Ctx<'_>, call: &Call<'_>, _: ContentRecord) -> Result<Response> {
    let all = jobs::all(ctx)?;
    let batched = call
        .route
        .query
        .pairs
        .iter()
        .any(|(k, _)| k == "b_start" || k == "b_size");
    if !batched {
        // Nick's answer: the whole list (finished jobs are pruned after a while, so it stays short)
        let out: Vec<JobView> = all.into_iter().map(|j| job_view(ctx, j)).collect();
        return Ok(Response::json(200, &out));
    }
    let batch = super::batching::Batch::for_route(ctx, call.route)?;
    let total = all.len();
    let items: Vec<JobView> = all
        .into_iter()
        .skip(batch.start)
        .take(batch.size)
        .map(|j| job_view(ctx, j))
        .collect();
    let url = format!("{}/@jobs", ctx.base_url);
    let batching = batch.links(&url, &call.req.query, &call.route.query, total);
    Ok(Response::json(
        200,
        &JobBatch {
            url,
            items,
            items_total: total,
            batching,
        },
    ))
}

fn job_param(ctx: &Ctx<'_>, call: &Call<'_>) -> Result<Job> {
    let id = call.param("id").unwrap_or_default();
    jobs::get(ctx, id)?.ok_or_else(|| EngineError::NotFound {
        url: format!("{}/@jobs/{id}", ctx.base_url),
        context: None,
    })
}

fn get_job(ctx: &mut Ctx<'_>, call: &Call<'_>, _: ContentRecord) -> Result<Response> {
    let j = job_param(ctx, call)?;
    Ok(Response::json(200, &job_view(ctx, j)))
}

fn job_result(ctx: &mut Ctx<'_>, call: &Call<'_>, _: ContentRecord) -> Result<Response> {
    let j = job_param(ctx, call)?;
    Ok(Response::json(200, &j.result))
}

fn delete_job(ctx: &mut Ctx<'_>, call: &Call<'_>, _: ContentRecord) -> Result<Response> {
    let j = job_param(ctx, call)?;
    jobs::delete(ctx, &j.uuid)?;
    Ok(Response::empty(204))
}

fn abort_job(ctx: &mut Ctx<'_>, call: &Call<'_>, _: ContentRecord) -> Result<Response> {
    let j = job_param(ctx, call)?;
    jobs::abort(ctx, &j.uuid)?;
    Ok(Response::empty(204))
}

fn retry_job(ctx: &mut Ctx<'_>, call: &Call<'_>, _: ContentRecord) -> Result<Response> {
    let j = job_param(ctx, call)?;
    jobs::retry(ctx, &j.uuid)?;
    Ok(Response::empty(204))
}

// ---------------------------------------------------------------- scheduled jobs

/// A scheduled job.
#[derive(Serialize, JsonSchema)]
pub struct ScheduleView {
    /// Its URL.
    #[serde(rename = "@id")]
    pub url: String,
    /// Its id.
    pub id: String,
    /// Its title.
    pub title: String,
    /// Its description.
    pub description: String,
    /// Whether the schedule runs it.
    pub enabled: bool,
    /// What it runs (`@scheduled-job-actions`).
    pub action: String,
    /// The action's parameters (a webhook's signing key is not shown).
    pub params: Map<String, Value>,
    /// A cron expression (UTC).
    pub schedule: String,
    /// When it last ran.
    pub last_run: Option<String>,
    /// When the schedule runs it next.
    pub next_run: Option<String>,
}

fn schedule_view(ctx: &Ctx<'_>, j: jobs::ScheduledJob) -> ScheduleView {
    let mut params = j.params;
    if params.contains_key("secret") {
        params.insert("secret".into(), json!("********"));
    }
    ScheduleView {
        url: format!("{}/@scheduled-jobs/{}", ctx.base_url, j.id),
        id: j.id,
        title: j.title,
        description: j.description,
        enabled: j.enabled,
        action: j.action,
        params,
        schedule: j.schedule,
        last_run: j.last_run.as_ref().map(crate::core::clock::iso),
        next_run: j.next_run.as_ref().map(crate::core::clock::iso),
    }
}

/// The fields of a scheduled job (POST: `id`, `title`, `action`, `schedule` required).
#[derive(Deserialize, JsonSchema, Default)]
#[serde(deny_unknown_fields)]
pub struct ScheduleRequest {
    /// Its id (letters, digits, `-`, `_`); on PATCH it must be the job's own.
    pub id: Option<String>,
    /// Its title.
    pub title: Option<String>,
    /// Its description.
    pub description: Option<String>,
    /// Whether the schedule runs it (default true).
    pub enabled: Option<bool>,
    /// What it runs.
    pub action: Option<String>,
    /// The action's parameters.
    pub params: Option<Map<String, Value>>,
    /// A cron expression: five fields (minute hour day month weekday) or six (seconds first).
    pub schedule: Option<String>,
}

impl From<ScheduleRequest> for jobs::ScheduleChanges {
    fn from(b: ScheduleRequest) -> Self {
        jobs::ScheduleChanges {
            id: b.id,
            title: b.title,
            description: b.description,
            enabled: b.enabled,
            action: b.action,
            params: b.params,
            schedule: b.schedule,
        }
    }
}

fn list_schedules(ctx: &mut Ctx<'_>, _: &Call<'_>, _: ContentRecord) -> Result<Response> {
    let out: Vec<ScheduleView> = jobs::schedules(ctx)?
        .into_iter()
        .map(|j| schedule_view(ctx, j))
        .collect();
    Ok(Response::json(200, &out))
}

fn schedule_param(ctx: &Ctx<'_>, call: &Call<'_>) -> Result<jobs::ScheduledJob> {
    let id = call.param("id").unwrap_or_default();
    jobs::schedule(ctx, id)?.ok_or_else(|| EngineError::NotFound {
        url: format!("{}/@scheduled-jobs/{id}", ctx.base_url),
        context: None,
    })
}

fn add_schedule(ctx: &mut Ctx<'_>, call: &Call<'_>, _: ContentRecord) -> Result<Response> {
    let b: ScheduleRequest = call.body()?;
    let job = jobs::create_schedule(ctx, b.into())?;
    let v = schedule_view(ctx, job);
    Ok(Response::json(201, &v).with_header("Location", &v.url))
}

fn get_schedule(ctx: &mut Ctx<'_>, call: &Call<'_>, _: ContentRecord) -> Result<Response> {
    let j = schedule_param(ctx, call)?;
    Ok(Response::json(200, &schedule_view(ctx, j)))
}

fn patch_schedule(ctx: &mut Ctx<'_>, call: &Call<'_>, _: ContentRecord) -> Result<Response> {
    let j = schedule_param(ctx, call)?;
    let b: ScheduleRequest = call.body()?;
    jobs::update_schedule(ctx, j, b.into())?;
    Ok(Response::empty(204))
}

fn delete_schedule(ctx: &mut Ctx<'_>, call: &Call<'_>, _: ContentRecord) -> Result<Response> {
    let j = schedule_param(ctx, call)?;
    jobs::delete_schedule(ctx, &j.id)?;
    Ok(Response::empty(204))
}

fn start_schedule(ctx: &mut Ctx<'_>, call: &Call<'_>, _: ContentRecord) -> Result<Response> {
    let mut j = schedule_param(ctx, call)?;
    jobs::run_schedule(ctx, &mut j)?;
    Ok(Response::empty(204))
}

fn schedule_actions(ctx: &mut Ctx<'_>, _: &Call<'_>, _: ContentRecord) -> Result<Response> {
    if ctx.profile().is_nick() {
        // Nick's actions (reindex), with Nick's texts and form
        let out: Vec<AddableKind> = rules::nick_kinds()
            .scheduled_actions
            .iter()
            .map(AddableKind::nick)
            .collect();
        return Ok(Response::json(200, &out));
    }
    let out: Vec<AddableKind> = jobs::SCHEDULED_ACTIONS
        .iter()
        .map(|(name, title, description, params)| AddableKind {
            schema: settings_schema(params),
            addview: name,
            description,
            title,
        })
        .collect();
    Ok(Response::json(200, &out))
}
