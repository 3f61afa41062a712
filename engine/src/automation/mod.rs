//! Automation: content rules (triggers, conditions, actions), the job queue and outbox (mail,
//! webhooks, scheduled jobs, retries), and form submissions.

pub mod forms;
pub mod jobs;
pub mod rules;
